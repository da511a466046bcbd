// What one layout's stream lost before this bridge sent it, counted once each:
// - trimmed before this bridge read it at all: counted every second by a script that compares the
//   group's read counter with the stream (the Redis function ac_settle_trimmed_1), which also sets the group's lag right;
// - pending for this bridge but its data gone (nil fields in a read, or named by XAUTOCLAIM): read
//   by an earlier run and trimmed before it was sent, or delivered to a read of this run whose
//   reply the link lost, so never had (trimmed unread). One this run settled itself (sent, say)
//   and whose XACK the link lost is not lost: read again, it is a duplicate.
import { LRUCache } from 'lru-cache';
import type { RedisClient } from '../runtime/redis.js';
import type { Logger } from '../runtime/log.js';
import type { LayoutCounters } from './counters.js';
import { settleTrimmed, streamIdAfter } from './stream-group.js';

/** Ids named in one "lost" log line at most. */
const LOST_IDS_LOGGED = 20;
const LOG_EVERY_MS = 5000;
/** How often entries trimmed before they were read are counted (and the group's lag set right). */
const COUNT_EVERY_MS = 1000;

export class LostEntries {
  private counting = false;
  /** the group's last-delivered-id when this run took it (null: a new group; undefined: not known) */
  private deliveredBeforeRun: string | null | undefined = undefined;
  private lastErrorLog = 0;
  /** ids already counted as lost: XREADGROUP and XAUTOCLAIM can both report one before its ack lands */
  private readonly counted = new LRUCache<string, true>({ max: 10_000 });
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly ops: RedisClient,
    private readonly stream: string,
    private readonly group: string,
    private readonly layoutId: string,
    private readonly c: LayoutCounters,
    private readonly log: Logger,
    private readonly now: () => number,
    /** whether this run settled a stream id (sent it, or dropped it for a counted reason) */
    private readonly settledHere: (streamId: string) => boolean,
  ) {}

  /** Counts what was trimmed unread every second, on the shared connection (off the read path). */
  start(): void {
    this.timer = setInterval(() => void this.count(), COUNT_EVERY_MS);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /**
   * Counts the entries trimmed before this bridge read them (and sets its group's lag right).
   * `atStart`: the group is this run's from now on, and what it delivered so far went to an
   * earlier run (or to nobody, when it is new).
   */
  async count(atStart = false): Promise<void> {
    if (this.counting && !atStart) return; // the last one still waits for its answer
    this.counting = true;
    let missed: number;
    try {
      const settled = await settleTrimmed(this.ops, this.stream, this.group);
      missed = settled.missed;
      if (atStart) this.deliveredBeforeRun = settled.lastDelivered;
    } catch (e) {
      // only the count and the lag gauge depend on it, never the output: noted, and tried again in a second
      this.c.settleErrors++;
      if (this.now() - this.lastErrorLog >= LOG_EVERY_MS) {
        this.lastErrorLog = this.now();
        this.log.warn({ layoutId: this.layoutId, err: String((e as Error)?.message ?? e) }, 'could not count entries trimmed before they were read');
      }
      return;
    } finally {
      this.counting = false;
    }
    if (missed === 0) return;
    this.c.lostUnread += missed;
    this.log.warn({ layoutId: this.layoutId, count: missed }, 'entries lost unread: the stream was trimmed past them before this bridge read them (STREAM_MAXLEN or STREAM_RETENTION_SECONDS too small for how far behind it was)');
  }

  /**
   * Pending entries found without their data (those not counted before). Those delivered to an
   * earlier run of this bridge (at or before its group's position when this run began) were read,
   * then trimmed before they were sent; those delivered since reached a read whose reply the link
   * lost (this run holds every entry it read until it is acked), so this bridge never had them:
   * trimmed unread. One this run settled itself is pending only because its XACK was lost: read
   * again, it is a duplicate, as it would be with its data.
   */
  found(pendingIds: readonly string[]): void {
    const fresh = pendingIds.filter((id) => !this.counted.has(id));
    if (fresh.length === 0) return;
    for (const id of fresh) this.counted.set(id, true);
    const ids = fresh.filter((id) => !this.settledHere(id));
    const again = fresh.length - ids.length;
    this.c.read += again;
    this.c.duplicates += again;
    if (ids.length === 0) return;
    const before = this.deliveredBeforeRun;
    const unread = before === undefined ? [] : ids.filter((id) => before === null || streamIdAfter(id, before));
    const read = ids.length - unread.length;
    this.c.read += read; // an entry never read is not in `read`'s sum (see counters.ts)
    this.c.lostTrimmed += read;
    this.c.lostUnread += unread.length;
    this.log.warn({ layoutId: this.layoutId, count: ids.length, read, unread: unread.length, ids: ids.slice(0, LOST_IDS_LOGGED) }, 'pending entries lost: their data was trimmed or deleted before they were sent');
  }
}
