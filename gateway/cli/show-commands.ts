// audiencectl's commands for a running show: crowd cues (re-arm, what each is doing), the
// moderation queue of held texts (one decision per text, muting a participant), and the layout's
// show record as CSV or JSON. A decision is recorded as by `cli:<user>@<host>` (or --by); the settings that bound
// the queue and trim the stream are the gateway's (MODERATION_HOLD_SECONDS, STREAM_MAXLEN,
// STREAM_RETENTION_SECONDS, TOKEN_TTL_SECONDS), read from the same environment.
import type { Command } from 'commander';
import { redisTimeMs } from '../../runtime/redis-clock.js';
import { loadConfig } from '../config.js';
import { AppError } from '../errors.js';
import { parseTime, recordCsv, recordJson } from '../store/show-export.js';
import { isoOrDash, operator, table } from './output.js';
import { leaf, run } from './command-kit.js';


function settings() {
  const env = process.env;
  const c = loadConfig({ MODERATION_HOLD_SECONDS: env.MODERATION_HOLD_SECONDS, STREAM_MAXLEN: env.STREAM_MAXLEN, STREAM_RETENTION_SECONDS: env.STREAM_RETENTION_SECONDS, TOKEN_TTL_SECONDS: env.TOKEN_TTL_SECONDS });
  return { holdMs: c.moderationHoldSeconds * 1000, trim: { maxLen: c.streamMaxLen, retentionMs: c.streamRetentionSeconds * 1000 } };
}


const iso = (ms: number) => new Date(ms).toISOString();
const oneLine = (text: string) => (text.length > 60 ? `${text.slice(0, 59)}…` : text);

export function addCrowdCommands(program: Command): void {
  const crowd = program.command('crowd').description("a layout's crowd cues");
  leaf(crowd, 'rearm', "re-arm a control's crowd cue so it can fire again (every bridge follows within 250 ms)")
    .argument('<layoutId>')
    .argument('<lid>', 'the control with the cue')
    .action(
      run(async ({ stores, out }, layoutId: string, lidText: string) => {
        const lid = Number(lidText);
        if (!/^\d{1,10}$/.test(lidText) || lid > 2147483647) throw new AppError('invalid_argument', `lid must be a control's lid (a whole number), not ${JSON.stringify(lidText)}`);
        await stores.cues.rearm(layoutId, lid);
        out.result({ layoutId, lid, rearmed: true }, `layout ${layoutId}: the cue of lid ${lid} is armed again`);
      }),
    );
  leaf(crowd, 'cues', "each crowd cue of a layout and what it is doing (armed, holding, fired with its value and time)")
    .argument('<layoutId>')
    .action(
      run(async ({ stores, out }, layoutId: string) => {
        const l = await stores.layouts.get(layoutId);
        if (!l) throw new AppError('layout_not_found', `no layout ${JSON.stringify(layoutId)}`);
        const cues = await stores.cues.states(l);
        const rows = cues.map((c) => [String(c.lid), c.phase, c.value === null ? '-' : String(c.value), isoOrDash(c.firedAt), isoOrDash(c.holdingSince)]);
        out.result(
          { layoutId, cues: cues.map((c) => ({ ...c, firedAt: c.firedAt === null ? null : new Date(c.firedAt).toISOString(), holdingSince: c.holdingSince === null ? null : new Date(c.holdingSince).toISOString() })) },
          cues.length === 0 ? `layout ${layoutId} has no crowd cues` : table([['LID', 'PHASE', 'VALUE', 'FIRED AT', 'HOLDING SINCE'], ...rows]),
        );
      }),
    );
}

export function addModerationCommands(program: Command): void {
  const moderation = program.command('moderation').description("a layout's moderation queue: texts of String controls in mode hold, waiting for a decision");
  leaf(moderation, 'list', 'the held texts, oldest first, and the latest decisions')
    .argument('<layoutId>')
    .action(
      run(async ({ stores, out }, layoutId: string) => {
        const l = await stores.layouts.get(layoutId);
        if (!l) throw new AppError('layout_not_found', `no layout ${JSON.stringify(layoutId)}`);
        const { holdMs } = settings();
        const now = await redisTimeMs(stores.redis);
        const { queue, decided } = await stores.moderation.list(layoutId, holdMs, now);
        const object = {
          layoutId,
          queue: queue.map((i) => ({ id: i.id, sub: i.sub, lid: i.lid, text: i.text, heldAt: iso(i.heldAt) })),
          decided: decided.map((r) => ({ id: r.id, decision: r.decision, by: r.by, at: iso(r.at), sub: r.sub, lid: r.lid, text: r.text })),
        };
        const rows = queue.map((i) => [i.id, String(i.lid), i.sub, iso(i.heldAt), JSON.stringify(oneLine(i.text))]);
        out.result(object, queue.length === 0 ? `layout ${layoutId}: nothing held` : table([['ID', 'LID', 'SUB', 'HELD AT', 'TEXT'], ...rows]));
      }),
    );
  for (const [name, decision, said] of [
    ['approve', 'approve', 'approved: it plays now'],
    ['reject', 'reject', 'rejected: it never plays'],
  ] as const) {
    leaf(moderation, name, `${name} one held text (a second decision on it changes nothing)`)
      .argument('<layoutId>')
      .argument('<id>', 'the held text (moderation list)')
      .option('--by <name>', 'who decided, as recorded (default: cli:<user>@<host>)')
      .action(
        run(async ({ stores, out }, layoutId: string, id: string, opts: { by?: string }) => {
          const { first, record } = await stores.moderation.decide(layoutId, id, decision, operator(opts.by), settings().trim);
          const object = { layoutId, id, first, decision: record.decision, by: record.by, at: iso(record.at) };
          out.result(object, first ? `layout ${layoutId}: ${id} ${said}` : `layout ${layoutId}: ${id} was already decided: ${record.decision} by ${record.by} at ${iso(record.at)}`);
        }),
      );
  }
  leaf(moderation, 'mute', "refuse a participant's Strings, through its renewals, until unmuted; their held texts are rejected")
    .argument('<layoutId>')
    .requiredOption('--sub <sub>', "the participant (the token's sub claim, shown by moderation list)")
    .option('--by <name>', 'who decided, as recorded (default: cli:<user>@<host>)')
    .action(
      run(async ({ stores, out }, layoutId: string, opts: { sub: string; by?: string }) => {
        const { until, rejected } = await stores.moderation.mute(layoutId, opts.sub, operator(opts.by), settings().trim);
        out.result({ layoutId, sub: opts.sub, mutedUntil: iso(until), rejected }, `layout ${layoutId}: ${opts.sub} muted until ${iso(until)} or unmuted; ${rejected} held texts of theirs rejected`);
      }),
    );
  leaf(moderation, 'unmute', "take a muted participant's Strings again")
    .argument('<layoutId>')
    .requiredOption('--sub <sub>', "the participant (the token's sub claim)")
    .option('--by <name>', 'who decided, as recorded (default: cli:<user>@<host>)')
    .action(
      run(async ({ stores, out }, layoutId: string, opts: { sub: string; by?: string }) => {
        const { wasMuted } = await stores.moderation.unmute(layoutId, opts.sub, operator(opts.by));
        out.result({ layoutId, sub: opts.sub, wasMuted }, wasMuted ? `layout ${layoutId}: ${opts.sub} unmuted` : `layout ${layoutId}: ${opts.sub} was not muted`);
      }),
    );
}

export function addShowCommands(program: Command): void {
  const show = program.command('show').description("a layout's show record: page switches, cue firings, moderation decisions, crowd values");
  leaf(show, 'export', 'print the show record between two moments, oldest first, as CSV or JSON')
    .argument('<layoutId>')
    .option('--from <time>', 'the first moment (ISO 8601, or ms since the epoch; default: the record\'s start)')
    .option('--to <time>', 'the last moment (default: now)')
    .requiredOption('--format <format>', 'csv or json')
    .action(
      run(async ({ stores }, layoutId: string, opts: { from?: string; to?: string; format: string }) => {
        if (opts.format !== 'csv' && opts.format !== 'json') throw new AppError('invalid_argument', `--format must be csv or json, not ${JSON.stringify(opts.format)}`);
        const [from, to] = [parseTime(opts.from), parseTime(opts.to)];
        if (Number.isNaN(from) || Number.isNaN(to)) throw new AppError('invalid_argument', '--from and --to take an ISO 8601 time or ms since the epoch');
        if (!(await stores.layouts.get(layoutId))) throw new AppError('layout_not_found', `no layout ${JSON.stringify(layoutId)}`);
        const { entries, unreadable } = await stores.showRecord.read(layoutId, from ?? 0, to ?? undefined);
        if (unreadable > 0) process.stderr.write(`audiencectl: ${unreadable} entries of the record are not readable and are left out\n`);
        process.stdout.write(opts.format === 'csv' ? recordCsv(entries) : `${recordJson(layoutId, from, to, entries, unreadable)}\n`);
      }),
    );
}
