// Reads one layout's action stream with this bridge's own consumer group, so every bridge gets
// every action. At start it first re-reads its own pending entries (read before a crash, never
// acked), then new ones with a bounded BLOCK. Stuck entries are reclaimed with XAUTOCLAIM.
// Entries that cannot be used are copied to the dead-letter stream and acked; entries older
// than maxAgeMs are dropped and acked; the rest go to the scheduler, which acks after sending.
import type { Redis } from 'ioredis';
import { decodeActionEntry } from '../schemas/action-entry.js';
import { actionStreamKey, deadLetterKey } from '../schemas/redis-keys.js';
import type { BridgeCounters } from './counters.js';
import type { Logger } from './log.js';
import type { LayoutScheduler } from './scheduler.js';

export interface ConsumerSettings {
  prefix: string;
  bridgeId: string;
  /** BLOCK of each read: also the longest the loop goes without showing progress */
  blockMs: number;
  /** entries per read */
  count: number;
  /** stop reading while the scheduler holds this many unsent messages for a target */
  maxBacklog: number;
  /** reclaim entries pending longer than this */
  reclaimIdleMs: number;
  /** dead-letter stream length (MAXLEN ~) */
  deadLetterMaxLen: number;
}

type StreamReply = [string, [string, string[]][]][] | null;

export function groupName(bridgeId: string): string {
  return `bridge:${bridgeId}`;
}

/**
 * This bridge's group on a layout's stream, from XINFO GROUPS: null when the group (or the
 * stream) does not exist; `lag` is the entries not yet delivered to the group.
 */
export async function groupInfo(redis: Redis, prefix: string, bridgeId: string, layoutId: string): Promise<{ lag: number } | null> {
  let groups: (string | number)[][];
  try {
    groups = (await redis.call('XINFO', 'GROUPS', actionStreamKey(prefix, layoutId))) as (string | number)[][];
  } catch (e) {
    if (String((e as Error).message).includes('no such key')) return null;
    throw e;
  }
  const field = (g: (string | number)[], name: string) => g[g.indexOf(name) + 1];
  const mine = groups.find((g) => field(g, 'name') === groupName(bridgeId));
  return mine ? { lag: Number(field(mine, 'lag') ?? 0) } : null;
}

/** XACK for one layout's stream in this bridge's group (the scheduler calls it after sending). */
export function streamAcker(ops: Redis, prefix: string, bridgeId: string, layoutId: string): (ids: string[]) => Promise<void> {
  const stream = actionStreamKey(prefix, layoutId);
  const group = groupName(bridgeId);
  return async (ids) => {
    if (ids.length > 0) await ops.xack(stream, group, ...ids);
  };
}

export class LayoutConsumer {
  private readonly stream: string;
  private readonly group: string;
  private running = false;
  private loop: Promise<void> | null = null;
  private lastReclaim = 0;
  private readonly ack: (ids: string[]) => Promise<void>;
  /** last time the read loop completed an iteration (for the watchdog) */
  lastProgress = 0;

  constructor(
    /** a connection of its own: XREADGROUP BLOCK holds it */
    private readonly reader: Redis,
    /** shared connection for acks and dead letters */
    private readonly ops: Redis,
    private readonly scheduler: LayoutScheduler,
    private readonly s: ConsumerSettings,
    private readonly counters: BridgeCounters,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.stream = actionStreamKey(s.prefix, scheduler.settings.layoutId);
    this.group = groupName(s.bridgeId);
    this.ack = streamAcker(ops, s.prefix, s.bridgeId, scheduler.settings.layoutId);
  }

  /** Creates the group (from new entries on) unless it exists. */
  async ensureGroup(): Promise<void> {
    try {
      await this.ops.xgroup('CREATE', this.stream, this.group, '$', 'MKSTREAM');
    } catch (e) {
      if (!String((e as Error).message).includes('BUSYGROUP')) throw e;
    }
  }

  start(): void {
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.reader.disconnect(); // ends a BLOCK in progress
    await this.loop;
  }

  private async run(): Promise<void> {
    // Our own pending entries are walked with a cursor: re-reading from 0 would return, again and
    // again, entries the scheduler holds but has not acked yet.
    let pendingCursor: string | null = '0';
    let backoff = 100;
    while (this.running) {
      try {
        if (this.scheduler.backlog() >= this.s.maxBacklog) {
          await new Promise((r) => setTimeout(r, 1000 / this.scheduler.settings.tickHz));
        } else if (pendingCursor !== null) {
          const entries = await this.read(pendingCursor, false);
          pendingCursor = entries.length === 0 ? null : entries[entries.length - 1]![0];
        } else {
          await this.read('>', true);
          if (this.now() - this.lastReclaim > this.s.reclaimIdleMs) await this.reclaim();
        }
        backoff = 100;
        this.lastProgress = this.now();
      } catch (e) {
        if (!this.running) break;
        this.counters.readErrors++;
        this.log.warn({ layoutId: this.scheduler.settings.layoutId, err: (e as Error).message, retryInMs: backoff }, 'stream read failed; retrying');
        await new Promise((r) => setTimeout(r, backoff));
        backoff = Math.min(backoff * 2, 2000);
        pendingCursor = '0'; // after an outage, finish our own pending entries first
        this.lastProgress = this.now();
      }
    }
  }

  private async read(from: string, block: boolean): Promise<[string, string[]][]> {
    const args: (string | number)[] = ['GROUP', this.group, this.s.bridgeId, 'COUNT', this.s.count];
    if (block) args.push('BLOCK', this.s.blockMs);
    args.push('STREAMS', this.stream, from);
    const reply = (await this.reader.call('XREADGROUP', ...args)) as StreamReply;
    const entries = reply?.[0]?.[1] ?? [];
    await this.handle(entries);
    return entries;
  }

  private async reclaim(): Promise<void> {
    this.lastReclaim = this.now();
    const reply = (await this.ops.call('XAUTOCLAIM', this.stream, this.group, this.s.bridgeId, this.s.reclaimIdleMs, '0-0', 'COUNT', this.s.count)) as [string, [string, string[] | null][]];
    const claimed = reply[1].filter((e): e is [string, string[]] => e[1] !== null);
    await this.handle(claimed);
  }

  private async handle(entries: [string, string[]][]): Promise<void> {
    const now = this.now();
    const layoutId = this.scheduler.settings.layoutId;
    const ackNow: string[] = [];
    let newest = this.counters.newestRead.get(layoutId) ?? 0;
    for (const [id, fields] of entries) {
      this.counters.read++;
      const decoded = decodeActionEntry(fields);
      const reason = !decoded.ok ? decoded.reason : decoded.entry.layoutId !== layoutId ? `entry is for layout "${decoded.entry.layoutId}"` : null;
      if (reason !== null || !decoded.ok) {
        this.counters.deadLettered++;
        this.log.warn({ layoutId, streamId: id, reason }, 'unusable stream entry; dead-lettered');
        await this.ops.xadd(deadLetterKey(this.s.prefix, layoutId), 'MAXLEN', '~', this.s.deadLetterMaxLen, '*', 'streamId', id, 'reason', reason ?? '', 'bridgeId', this.s.bridgeId, 'fields', JSON.stringify(fields));
        ackNow.push(id);
      } else if (now - decoded.entry.ts > this.scheduler.settings.maxAgeMs) {
        this.counters.droppedStale++;
        ackNow.push(id);
      } else {
        newest = Math.max(newest, decoded.entry.ts);
        this.scheduler.offer(id, decoded.entry);
      }
    }
    if (newest > 0) this.counters.newestRead.set(layoutId, newest);
    await this.ack(ackNow);
  }
}
