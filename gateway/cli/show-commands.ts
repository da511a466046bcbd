// audiencectl moderation and show: a layout's queue of held texts, one decision per text, muting a
// participant; the layout's show record as CSV or JSON. A decision is recorded as by `cli:<user>@<host>` (or --by); the settings that bound
// the queue and trim the stream are the gateway's (MODERATION_HOLD_SECONDS, STREAM_MAXLEN,
// STREAM_RETENTION_SECONDS, TOKEN_TTL_SECONDS), read from the same environment.
import type { Command } from 'commander';
import { redisTimeMs } from '../../runtime/redis-clock.js';
import { loadConfig } from '../config.js';
import { AppError } from '../errors.js';
import type { Stores } from '../store/stores.js';
import { parseTime, recordCsv, recordJson } from '../show/export.js';
import { operator, table, type CliOutput } from './output.js';

type Run = (body: (ctx: { stores: Stores; out: CliOutput }, ...args: never[]) => Promise<void>) => (...args: unknown[]) => Promise<void>;
type Leaf = (parent: Command, name: string, description: string) => Command;

function settings() {
  const env = process.env;
  const c = loadConfig({ MODERATION_HOLD_SECONDS: env.MODERATION_HOLD_SECONDS, STREAM_MAXLEN: env.STREAM_MAXLEN, STREAM_RETENTION_SECONDS: env.STREAM_RETENTION_SECONDS, TOKEN_TTL_SECONDS: env.TOKEN_TTL_SECONDS });
  return { holdMs: c.moderationHoldSeconds * 1000, trim: { maxLen: c.streamMaxLen, retentionMs: c.streamRetentionSeconds * 1000 }, tokenTtlMs: c.tokenTtlSeconds * 1000 };
}


const iso = (ms: number) => new Date(ms).toISOString();
const oneLine = (text: string) => (text.length > 60 ? `${text.slice(0, 59)}…` : text);

export function addModerationCommands(program: Command, leaf: Leaf, run: Run): void {
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
  leaf(moderation, 'mute', "refuse a participant's Strings until their token expires; their held texts are rejected")
    .argument('<layoutId>')
    .requiredOption('--sub <sub>', "the participant (the token's sub claim, shown by moderation list)")
    .option('--by <name>', 'who decided, as recorded (default: cli:<user>@<host>)')
    .action(
      run(async ({ stores, out }, layoutId: string, opts: { sub: string; by?: string }) => {
        const s = settings();
        const now = await redisTimeMs(stores.redis);
        const { until, rejected } = await stores.moderation.mute(layoutId, opts.sub, operator(opts.by), now + s.tokenTtlMs, s.trim);
        out.result({ layoutId, sub: opts.sub, mutedUntil: iso(until), rejected }, `layout ${layoutId}: ${opts.sub} muted until ${iso(until)}; ${rejected} held texts of theirs rejected`);
      }),
    );
}

export function addShowCommands(program: Command, leaf: Leaf, run: Run): void {
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
        const entries = await stores.showRecord.read(layoutId, from ?? 0, to ?? undefined);
        process.stdout.write(opts.format === 'csv' ? recordCsv(entries) : `${recordJson(layoutId, from, to, entries)}\n`);
      }),
    );
}
