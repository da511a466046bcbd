// Reads one layout's action stream with this bridge's own consumer group, so every bridge gets
// every action. At start it first re-reads its own pending entries (read before a crash, never
// acked), then new ones with a bounded BLOCK. Stuck entries are reclaimed with XAUTOCLAIM.
// Over a WAN each round trip to Redis counts, so nothing else waits between a new entry and its
// send: a second blocking read is always queued behind the one in flight on the reader's
// connection (Redis starts it the moment the first replies, and replies keep their order), and
// the count of entries trimmed unread runs on its own timer on the shared connection.
// Each entry is settled on its own (entry-settler.ts), and nothing it holds can stop the loop.
// A missing group or stream (Redis lost its data) is created again from the oldest entry left.
// For the watchdog (alive()), the loop lives while it completes iterations or waits on something
// bounded: a read within its timeout, or a wait for a Redis it cannot reach (a restart would not
// bring Redis back). It stops only for a loop that is stuck or whose reads Redis answers with errors.
import { isCommandTimeout, type RedisClient } from '../runtime/redis.js';
import { ReplyError } from 'ioredis';
import { actionStreamKey, deadLetterKey } from '../schemas/redis-keys.js';
import type { BridgeCounters, LayoutCounters } from './counters.js';
import type { Logger } from '../runtime/log.js';
import type { LayoutScheduler } from './scheduler.js';
import { DeadLetters } from './dead-letters.js';
import { EntrySettler, type RawEntry } from './entry-settler.js';
import { LostEntries } from './lost-entries.js';
import { createGroup, groupName, isMissingGroup } from './stream-group.js';
import { sendStreamCommand } from './stream-command.js';

export interface ConsumerSettings {
  prefix: string;
  bridgeId: string;
  /** BLOCK of each read: also the longest the loop goes without showing progress */
  blockMs: number;
  /** the reader connection's command timeout: a read waits this long at most */
  readTimeoutMs: number;
  /** entries per read, at most (a read asks only for what fits in the backlog) */
  count: number;
  /** stop reading while the scheduler holds this many unsent messages for a target */
  maxBacklog: number;
  /** reclaim entries pending longer than this */
  reclaimIdleMs: number;
  /** dead-letter stream length (MAXLEN ~) */
  deadLetterMaxLen: number;
}

type StreamReply = [string, RawEntry[]][] | null;

const LOG_EVERY_MS = 5000;
/** A read comes back within its BLOCK and this while the link is well: the crowd's leases run no further past the last read. */
const LEASE_READ_SLACK_MS = 500;

export class LayoutConsumer {
  private readonly stream: string;
  private readonly group: string;
  private readonly layoutId: string;
  private readonly c: LayoutCounters;
  private running = false;
  private loop: Promise<void> | null = null;
  private lastReclaim = 0;
  /** where the XAUTOCLAIM scan of the group's pending list goes on ('0-0': from the start) */
  private claimCursor = '0-0';
  private failingSince: number | null = null;
  private lastError = '';
  private lastReadErrorLog = 0;
  /** last time the read loop completed an iteration (for the watchdog) */
  lastProgress = 0;
  /** until when the loop waits on something bounded (a read under its timeout, a wait for Redis to come back) */
  private waitingUntil = 0;
  /** the blocking read queued behind the one in flight (see the top of this file) */
  private queuedRead: Promise<StreamReply> | null = null;
  /** what was trimmed before it was sent, or before it was read */
  private readonly losses: LostEntries;
  /** what becomes of each entry read */
  private readonly entries: EntrySettler;
  /** ends the wait after a failed read early (the reader's connection is back) */
  private wake: (() => void) | null = null;
  private readonly onReaderReady = () => this.wake?.();

  constructor(
    /** a connection of its own: XREADGROUP BLOCK holds it */
    private readonly reader: RedisClient,
    /** shared connection for dead letters and group management */
    private readonly ops: RedisClient,
    private readonly scheduler: LayoutScheduler,
    private readonly s: ConsumerSettings,
    counters: BridgeCounters,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.layoutId = scheduler.settings.layoutId;
    this.stream = actionStreamKey(s.prefix, this.layoutId);
    this.group = groupName(s.bridgeId);
    this.c = counters.layout(this.layoutId);
    this.losses = new LostEntries(ops, this.stream, this.group, this.layoutId, this.c, log, now, (id) => scheduler.settled(id));
    const deadLetters = new DeadLetters(ops, deadLetterKey(s.prefix, this.layoutId), { maxLen: s.deadLetterMaxLen, bridgeId: s.bridgeId }, this.layoutId, this.c, log, now);
    this.entries = new EntrySettler(scheduler, counters, this.losses, deadLetters, log, now);
  }

  /**
   * Creates the group unless it exists, from maxAgeMs ago (stream ids are times): a bridge's first
   * start delivers what is still fresh, such as an action accepted while it was starting, and
   * nothing older. Then makes its read counter exact at once: while Redis does not know it, a read
   * across trimmed entries would take them as read.
   */
  async ensureGroup(): Promise<void> {
    await this.createGroup(`${Math.max(0, this.now() - this.scheduler.settings.maxAgeMs)}-0`);
    await this.losses.count(true);
  }

  private createGroup(from: string): Promise<boolean> {
    return createGroup(this.ops, this.stream, this.group, from);
  }

  /** Why this layout's read loop is not healthy, or null. */
  problem(): string | null {
    if (this.failingSince !== null) return `layout ${this.layoutId}: stream reads failing for ${this.now() - this.failingSince} ms (${this.lastError})`;
    if (this.lastProgress === 0) return `layout ${this.layoutId}: no stream read yet`;
    return null;
  }

  start(): void {
    this.running = true;
    this.reader.on('ready', this.onReaderReady);
    this.loop = this.run();
    this.losses.start();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.losses.stop();
    this.reader.off('ready', this.onReaderReady);
    this.reader.disconnect(); // ends a BLOCK in progress
    this.wake?.();
    await this.loop;
  }

  /**
   * For the watchdog: the loop completed an iteration since `since`, or waits on something that
   * ends by itself (a read within its timeout, a wait for an unreachable Redis). A loop whose reads
   * Redis answers with errors, or one stuck in an unbounded wait, is not alive.
   */
  alive(since: number): boolean {
    return this.lastProgress >= since || this.now() <= this.waitingUntil;
  }

  /** Awaits `p`, known to end within `boundMs`, as a healthy wait (see alive()). */
  private async bounded<T>(p: Promise<T>, boundMs: number): Promise<T> {
    this.waitingUntil = this.now() + boundMs;
    try {
      return await p;
    } finally {
      this.waitingUntil = 0;
    }
  }

  private progress(): void {
    this.lastProgress = this.now();
    this.failingSince = null;
  }

  private async run(): Promise<void> {
    // Our own pending entries are walked with a cursor; entries the scheduler still holds are
    // skipped when read again, so re-walking after an outage neither resends nor recounts them.
    let pendingCursor: string | null = '0';
    let backoff = 100;
    while (this.running) {
      try {
        if (this.scheduler.backlog() >= this.s.maxBacklog) {
          await new Promise((r) => setTimeout(r, 1000 / this.scheduler.settings.tickHz)); // healthy: the sender drains
        } else if (pendingCursor !== null) {
          const entries = await this.read(pendingCursor, false);
          pendingCursor = entries.length === 0 ? null : entries[entries.length - 1]![0];
        } else {
          await this.readNew();
          if (this.claimCursor !== '0-0' || this.now() - this.lastReclaim > this.s.reclaimIdleMs) await this.reclaim();
        }
        backoff = 100;
        this.progress();
      } catch (e) {
        this.queuedRead = null; // what it took is pending: read again from our pending list below
        if (!this.running) break;
        if (isMissingGroup(e)) {
          if (await this.recreateGroup(e)) {
            pendingCursor = '0';
            continue;
          }
        } else this.readFailed(e, backoff);
        // A read unanswered past its timeout on a connection that looks open: the link went silent
        // (no FIN, no RST), and a half-open TCP connection would wait for minutes. Make a new one.
        if (isCommandTimeout(e) && this.reader.status === 'ready') this.reader.disconnect(true);
        const wait = this.reader.status === 'ready' ? backoff : Math.max(backoff, 2000); // or until the connection is back
        // Redis unreachable: the loop is alive and waits for it (a restart would not bring it back);
        // Redis answering errors: it is not
        await (e instanceof ReplyError ? this.sleep(wait) : this.bounded(this.sleep(wait), wait));
        backoff = Math.min(backoff * 2, 2000);
        pendingCursor = '0'; // after an outage, finish our own pending entries first
      }
    }
    this.queuedRead = null;
  }

  /** Waits `ms`, or less if the reader's connection comes back (or the consumer stops). */
  private sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }

  /**
   * Reads new entries: takes the reply of the read queued last time (or sends one), queues the
   * next before handling it, so Redis blocks for new entries again without waiting for a round trip.
   */
  private async readNew(): Promise<void> {
    const current = this.queuedRead ?? this.sendRead('>', true);
    this.queuedRead = null;
    current.catch(() => {}); // awaited below; a failure of the queued one must not go unhandled meanwhile
    if (this.scheduler.backlog() < this.s.maxBacklog) {
      this.queuedRead = this.sendRead('>', true);
      this.queuedRead.catch(() => {});
    }
    const entries = (await this.bounded(current, this.s.readTimeoutMs))?.[0]?.[1] ?? [];
    await this.entries.handle(entries);
    // what the stream told of the gateways: up to now when nothing more waits, else up to the last entry read
    this.scheduler.crowd.heard(entries.length < this.s.count ? this.now() : Number(entries.at(-1)![0].split('-')[0]), this.s.blockMs + LEASE_READ_SLACK_MS);
  }


  private readFailed(e: unknown, retryInMs: number): void {
    this.c.readErrors++;
    this.lastError = String((e as Error)?.message ?? e);
    const now = this.now();
    this.failingSince ??= now;
    if (now - this.lastReadErrorLog >= LOG_EVERY_MS) {
      this.lastReadErrorLog = now;
      this.log.warn({ layoutId: this.layoutId, err: this.lastError, failingForMs: now - this.failingSince, retryInMs }, 'stream read failed; retrying');
    }
  }

  /** The group or stream vanished: create it again from the oldest entry still there. False (the failure recorded) if that failed too. */
  private async recreateGroup(cause: unknown): Promise<boolean> {
    try {
      const created = await this.createGroup('0');
      this.claimCursor = '0-0';
      await this.losses.count(true);
      if (created) {
        this.c.groupsRecreated++;
        this.log.warn({ layoutId: this.layoutId, group: this.group, cause: (cause as Error).message }, 'consumer group was missing (Redis lost its data?); created it again from the oldest entry in the stream');
      }
      return true;
    } catch (e) {
      this.readFailed(e, 0);
      return false;
    }
  }

  private async read(from: string, block: boolean): Promise<RawEntry[]> {
    const entries = (await this.bounded(this.sendRead(from, block), this.s.readTimeoutMs))?.[0]?.[1] ?? [];
    await this.entries.handle(entries);
    return entries;
  }

  private sendRead(from: string, block: boolean): Promise<StreamReply> {
    // No more than fits in the backlog: ioredis parses a reply in one go, so an oversized read holds
    // the event loop (and the next tick) for as long as it takes to parse what cannot be queued yet.
    const count = Math.max(1, Math.min(this.s.count, this.s.maxBacklog - this.scheduler.backlog()));
    const args: (string | number)[] = ['GROUP', this.group, this.s.bridgeId, 'COUNT', count];
    if (block) args.push('BLOCK', this.s.blockMs);
    args.push('STREAMS', this.stream, from);
    return sendStreamCommand<StreamReply>(this.reader, 'XREADGROUP', args);
  }

  private async reclaim(): Promise<void> {
    this.lastReclaim = this.now();
    const reply = await sendStreamCommand<[string, RawEntry[], string[]?]>(this.ops, 'XAUTOCLAIM', [this.stream, this.group, this.s.bridgeId, this.s.reclaimIdleMs, this.claimCursor, 'COUNT', this.s.count]);
    this.claimCursor = reply[0];
    // Redis 7 drops claimed entries whose data is gone from the pending list and names them here.
    this.losses.found(reply[2] ?? []);
    await this.entries.handle(reply[1]);
  }
}
