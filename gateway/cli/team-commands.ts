// audiencectl team: create and list teams.
import type { Command } from 'commander';
import { isoOrDash, table } from './output.js';
import { leaf, run } from './command-kit.js';

export function addTeamCommands(program: Command): void {
  const team = program.command('team').description('teams');
  leaf(team, 'create', 'create a team')
    .requiredOption('--name <name>', 'team name')
    .action(
      run(async ({ stores, out }, opts: { name: string }) => {
        const t = await stores.teams.create(opts.name);
        out.result({ teamId: t.teamId }, `team ${t.teamId} created (${t.name})`);
      }),
    );
  leaf(team, 'list', 'list teams').action(
    run(async ({ stores, out }) => {
      const teams = await stores.teams.list();
      out.result({ teams }, table([['TEAM', 'NAME', 'CREATED'], ...teams.map((t) => [t.teamId, t.name, isoOrDash(t.createdAt)])]));
    }),
  );
}
