// audiencectl layout: import, check, list, show and activate layouts.
import type { Command } from 'commander';
import { describeAggregate } from '../../schemas/aggregate.js';
import { dmxFixtures, DMX_FIXTURE_CHANNELS } from '../../schemas/light.js';
import { AppError } from '../errors.js';
import { checkLayoutDefinition } from '../layouts/check-definition.js';
import { CliOutput, operator, table } from './output.js';
import { leaf, readJsonFile, run } from './command-kit.js';

export function addLayoutCommands(program: Command): void {
  const layout = program.command('layout').description('layouts');
  leaf(layout, 'import', 'create or replace a layout from a definition file')
    .argument('<file>', 'layout definition (JSON, see schemas/layout-definition.schema.json)')
    .requiredOption('--team <teamId>', 'owning team')
    .action(
      run(async ({ stores, out }, file: string, opts: { team: string }) => {
        await stores.teams.require(opts.team);
        const r = await stores.layouts.import(opts.team, readJsonFile(file));
        out.result({ layoutId: r.layoutId, replaced: r.replaced }, `layout ${r.layoutId} ${r.replaced ? 'replaced' : 'created'}`);
      }),
    );
  leaf(layout, 'check', 'validate a definition file without importing it (every problem at once; needs no Redis)')
    .argument('<file>', 'layout definition (JSON, see schemas/layout-definition.schema.json)')
    .action((file: string, _opts: unknown, cmd: Command) => {
      const out = new CliOutput(cmd.opts<{ json?: boolean }>().json === true);
      try {
        const def = checkLayoutDefinition(readJsonFile(file));
        const controls = def.pages.reduce((n, p) => n + p.controls.length, 0);
        out.result({ valid: true, layoutId: def.layoutId, pages: def.pages.length, controls }, `${file}: a valid layout (${def.layoutId}: ${def.pages.length} pages, ${controls} controls)`);
      } catch (e) {
        process.exitCode = out.failure(e);
      }
    });
  leaf(layout, 'list', "list a team's layouts")
    .requiredOption('--team <teamId>', 'team')
    .action(
      run(async ({ stores, out }, opts: { team: string }) => {
        await stores.teams.require(opts.team);
        const layouts = await stores.layouts.listByTeam(opts.team);
        const rows = layouts.map((l) => ({ layoutId: l.layoutId, name: l.name, activePageId: l.activePageId, pages: l.pages.map((p) => p.pageId) }));
        out.result({ layouts: rows }, table([['LAYOUT', 'NAME', 'ACTIVE PAGE', 'PAGES'], ...rows.map((r) => [r.layoutId, r.name, r.activePageId, r.pages.join(',')])]));
      }),
    );
  leaf(layout, 'show', 'show a layout with all its pages')
    .argument('<layoutId>')
    .action(
      run(async ({ stores, out }, layoutId: string) => {
        const l = await stores.layouts.get(layoutId);
        if (!l) throw new AppError('layout_not_found', `no layout ${JSON.stringify(layoutId)}`);
        const object = {
          layoutId: l.layoutId,
          teamId: l.teamId,
          name: l.name,
          activePageId: l.activePageId,
          ...(l.limits && { limits: l.limits }),
          ...(l.zones.length > 0 && { zones: l.zones }),
          ...(l.light && { light: { ...l.light, ...(l.light.dmx && { fixtures: dmxFixtures(l.light) }) } }),
          ...(l.tokensRevokedBefore > 0 && { tokensRevokedBefore: new Date(l.tokensRevokedBefore).toISOString() }),
          pages: l.pages,
        };
        const lines = [`${l.layoutId} (${l.name}), team ${l.teamId}, active page ${l.activePageId}${l.zones.length > 0 ? `, zones ${l.zones.join(', ')}` : ''}`];
        if (l.light) lines.push(`light: lead ${l.light.lightLeadMs} ms, ${l.light.zones.length > 0 ? `zones ${l.light.zones.join(', ')}` : 'every phone as zone *'}${l.light.dmx ? `; sACN universe ${l.light.dmx.universe}: ${dmxFixtures(l.light).map((f) => `${f.zone} at ${f.address}`).join(', ')} (${DMX_FIXTURE_CHANNELS} channels each: dimmer, red, green, blue, strobe, pattern)` : ''}`);
        for (const p of l.pages) {
          lines.push(`page ${p.pageId}${p.pageId === l.activePageId ? ' (active)' : ''}: ${p.name}`);
          for (const c of p.controls) lines.push(`  lid ${c.lid}  ${c.address}  ${c.type}  ${c.props.label}${c.aggregate ? `  (crowd: ${describeAggregate(c.aggregate)})` : ''}`);
        }
        out.result(object, lines.join('\n'));
      }),
    );
  leaf(layout, 'activate', 'make a page the active one (every gateway switches at once)')
    .argument('<layoutId>')
    .argument('<pageId>')
    .option('--by <name>', 'who switched, as the show record says it (default: cli:<user>@<host>)')
    .action(
      run(async ({ stores, out }, layoutId: string, pageId: string, opts: { by?: string }) => {
        await stores.layouts.activate(layoutId, pageId, operator(opts.by));
        out.result({ layoutId, activePageId: pageId }, `layout ${layoutId}: page ${pageId} is active`);
      }),
    );
}
