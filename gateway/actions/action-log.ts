// Appends accepted actions to their layout's stream, by group commit: each stream has at most two
// Lua calls (store/lua/appendActions-1.lua) in flight (or more, when one turn accepted more than
// MAX_BATCH actions), and the actions accepted while both are in flight wait and go to Redis
// together in the next call, each still its own stream entry. When Redis is idle an action goes out
// at the end of its event-loop turn; under load the calls grow instead of multiplying, so Redis and
// the gateway pay per call far less often than per action. Every caller's promise settles once
// Redis answered its call, so the route answers 200 only for an action that is in the stream.
import type { RedisClient } from '../../runtime/redis.js';
import { ACTION_FIELD, encodeActionEntry } from '../../schemas/action-entry.js';
import type { ActionEntry, ActionValue, Control } from '../../schemas/types.js';
import { AppError, orUnavailable, writeRefusal, type WriteRefusal } from '../errors.js';
import type { RedisKeys } from '../store/keys.js';
import { untimed, type RedisTimer } from '../store/redis.js';
import { scriptRefusal } from '../store/script-replies.js';
import { runScript, runScriptOnBulk } from '../store/scripts.js';
import { EntryBatch } from './entry-batch.js';
import { rateLimited } from '../limits/participant-limits.js';

const NEVER = () => false;
/** The answer to a request whose client left before its action was applied (no one reads it). */
const clientLeft = () => new AppError('unavailable', 'The client left before the action was applied.');

/** At most this many entries go in one Lua call, so one call never holds Redis for long. */
export const MAX_BATCH = 256;

/**
 * Calls in flight per stream (on one connection, so Redis runs them in the order sent). With one,
 * the gateway idled while its call was out: 0.88 to 0.90 of its core under wrk and 0.41 to 0.42x
 * the bare reply; with two, 0.96 to 0.97 of the core and 0.43 to 0.46x, at the same CPU per action
 * (the action probe, bench/action.ts in git history, interleaved, 2026-11-23). Three did no better.
 */
export const MAX_IN_FLIGHT = 2;

/**
 * Who waits for an append: told once, `stored` or `failed`, and asked before the call whether its
 * client left. The route implements it on one object per request, so an accepted action costs no
 * promise between its append and its answer.
 */
export interface AppendWaiter {
  stored(): void;
  failed(e: unknown): void;
  /** the request's client is gone: its action is not appended (its answer could not be sent) */
  aborted(): boolean;
}

/** The promise form of a waiter, for callers off the hot path. */
class PromiseWaiter implements AppendWaiter {
  constructor(
    readonly stored: () => void,
    readonly failed: (e: unknown) => void,
    readonly aborted: () => boolean,
  ) {}
}

/** How a stream is trimmed on every append: by count and by age, both approximate (whole nodes). */
export interface StreamTrim {
  /** about this many entries at most (MAXLEN ~) */
  readonly maxLen: number;
  /** entries older than this are trimmed (MINID ~) */
  readonly retentionMs: number;
}

/** An Idempotency-Key's record: where it is looked up and kept (one participant's window of keys). */
export interface OnceRecord {
  /** the hash of the current window and that of the previous one */
  readonly current: string;
  readonly previous: string;
  readonly key: string;
  /** the action's fingerprint: the same key with another one is idempotency_key_reused */
  readonly fingerprint: string;
  /** when the current window's hash may go (ms since the epoch) */
  readonly expiresAt: number;
  /** the most keys one participant may use in a window */
  readonly cap: number;
  /** when the next window starts (the wait of a participant at the cap) */
  readonly nextWindowAt: number;
}

interface Batch {
  /** the entries, as the call's arguments (entry-batch.ts) */
  readonly entries: EntryBatch;
  readonly waiters: AppendWaiter[];
}

export class ActionLog {
  /** the actions waiting for their call, by layout id (the stream key is made once per call) */
  private readonly batches = new Map<string, Batch>();
  /** the calls in flight, by layout id (a batch of more than MAX_BATCH actions takes several) */
  private readonly inFlight = new Map<string, number>();
  private flushScheduled = false;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly trim: StreamTrim,
    private readonly timed: RedisTimer = untimed,
    /** what a waiter threw when told (a bug in a caller): logged by the gateway */
    private readonly report: (e: unknown) => void = (e) => process.emitWarning(`an append waiter threw: ${String(e)}`, 'ActionLogWarning'),
    /** a write Redis refused while up (OOM, MISCONF...): counted and logged by the gateway, answered 503 */
    private readonly onRefused: (reason: WriteRefusal, detail: string) => void = () => {},
    private readonly now: () => number = Date.now,
  ) {}

  /** The MINID of this moment's trim: every entry id below it is older than the retention. */
  private minId(): string {
    return `${Math.max(0, this.now() - this.trim.retentionMs)}-0`;
  }

  /** Counts a failure that says Redis refused the write (an error, or a script's error text). */
  private noteRefusal(e: unknown): void {
    const refused = writeRefusal(e);
    if (refused) this.onRefused(refused, e instanceof Error ? e.message : String(e));
  }

  /** A call whose refusal, if Redis refuses it, is counted before it is passed on. */
  private counted<T>(call: Promise<T>): Promise<T> {
    return call.catch((e: unknown) => {
      this.noteRefusal(e);
      throw e;
    });
  }

  /**
   * Appends an action unless its Idempotency-Key was used before (one Lua call: the check, the XADD
   * and the record). Resolves once stored, or at once for a repeat of the same action; rejects with
   * `idempotency_key_reused` for a key used with another action, `rate_limited` when the participant
   * used as many keys as a window allows, `unavailable` if Redis could not say. Not batched: a client
   * that sends the header pays one call per action.
   */
  appendOnce(entry: ActionEntry, once: OnceRecord, aborted: () => boolean = NEVER): Promise<void> {
    // sent after this turn, like the batch, so a request whose client left in this turn is not applied
    return new Promise<void>((r) => setImmediate(r)).then(() => {
      if (aborted()) throw clientLeft();
      return this.appendOnceNow(entry, once);
    });
  }

  private appendOnceNow(entry: ActionEntry, once: OnceRecord): Promise<void> {
    const call = runScript(
      this.redis,
      'appendOnce',
      [this.keys.actions(entry.layoutId), once.current, once.previous],
      [this.trim.maxLen, this.minId(), ACTION_FIELD, encodeActionEntry(entry), once.key, once.fingerprint, once.expiresAt, once.cap],
    );
    return orUnavailable(this.counted(this.timed('append_once', call))).then((reply) => {
      const code = Array.isArray(reply) ? Number(reply[0]) : NaN;
      const refusal = scriptRefusal('appendOnce', code);
      if (refusal === 'rate_limited') throw rateLimited(once.nextWindowAt - this.now(), 'Idempotency-Keys from this participant in this window');
      if (refusal !== null) throw new AppError(refusal);
      if (code !== 0 && code !== 1) throw new AppError('unavailable');
    });
  }

  /** Resolves once Redis has stored the entry; rejects with `unavailable` if it could not. */
  append(entry: ActionEntry, aborted: () => boolean = NEVER): Promise<void> {
    return this.appendPayload(entry.layoutId, encodeActionEntry(entry), aborted);
  }

  /** Appends an encoded entry (an action or a crowd summary) to the layout's stream, in the same group commit. */
  appendPayload(layoutId: string, payload: string, aborted: () => boolean = NEVER): Promise<void> {
    return new Promise((resolve, reject) => this.appendFor(layoutId, payload, new PromiseWaiter(resolve, reject, aborted)));
  }

  /** The same append, answered through `waiter` (`stored`, or `failed` with `unavailable`) instead of a promise. */
  appendFor(layoutId: string, payload: string, waiter: AppendWaiter): void {
    const batch = this.batchOf(layoutId);
    batch.entries.addText(payload);
    this.queue(layoutId, batch, waiter);
  }

  /** Appends a new action's entry (a fresh id; the control's fields, `value`, `ts`), answered through `waiter`. */
  appendAction(layoutId: string, control: Control, value: ActionValue, ts: number, waiter: AppendWaiter): void {
    const batch = this.batchOf(layoutId);
    batch.entries.addAction(layoutId, control, value, ts);
    this.queue(layoutId, batch, waiter);
  }

  private batchOf(layoutId: string): Batch {
    let batch = this.batches.get(layoutId);
    if (!batch) {
      batch = { entries: new EntryBatch(), waiters: [] };
      this.batches.set(layoutId, batch);
    }
    return batch;
  }

  /** The waiter of the entry just added (only once it is added: waiters[i] is entry i's), and the flush scheduled. */
  private queue(layoutId: string, batch: Batch, waiter: AppendWaiter): void {
    batch.waiters.push(waiter);
    if (this.canSend(layoutId)) this.scheduleFlush(); // otherwise a call in flight sends it when answered
  }

  /** setImmediate runs after the poll phase, so the flush gathers every request uWS handled in this turn. */
  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(this.flush);
  }

  private readonly flush = (): void => {
    this.flushScheduled = false;
    for (const [layoutId, batch] of this.batches) {
      if (!this.canSend(layoutId)) continue; // waits for a call in flight
      this.batches.delete(layoutId);
      // A request whose client left in this turn (uWS closes a connection that pipelined requests
      // whose answers are still pending) is not applied: no action without its answer.
      let { entries, waiters } = batch;
      if (waiters.some((w) => w.aborted())) {
        const keep = waiters.map((w) => !w.aborted());
        entries = entries.kept(keep);
        for (const w of waiters.filter((_, i) => !keep[i])) this.tell(w, clientLeft());
        waiters = waiters.filter((_, i) => keep[i]);
      }
      for (let i = 0; i < waiters.length; i += MAX_BATCH) {
        const to = Math.min(waiters.length, i + MAX_BATCH);
        this.send(layoutId, entries, i, to, waiters.length <= MAX_BATCH ? waiters : waiters.slice(i, to));
      }
    }
  };

  private canSend(layoutId: string): boolean {
    return (this.inFlight.get(layoutId) ?? 0) < MAX_IN_FLIGHT;
  }

  /** Sends entries [from, to) of `entries` in one call; `waiters` are theirs. */
  private send(layoutId: string, entries: EntryBatch, from: number, to: number, waiters: AppendWaiter[]): void {
    this.inFlight.set(layoutId, (this.inFlight.get(layoutId) ?? 0) + 1);
    const call = runScriptOnBulk(this.redis, 'appendActions', [this.keys.actions(layoutId)], [this.trim.maxLen, this.minId(), ACTION_FIELD], to - from, entries.bytes(from, to), () => {
      const texts: string[] = [];
      for (let i = from; i < to; i++) texts.push(entries.text(i));
      return texts;
    });
    // Every call ends (ioredis's command timeout), so a stream's queue never waits on a lost answer.
    orUnavailable(this.counted(this.timed('append_actions', call))).then(
      (reply) => {
        this.answered(layoutId);
        const [done, error] = Array.isArray(reply) ? (reply as [unknown, unknown]) : [];
        const appended = typeof done === 'string' ? done : ''; // "1" or "0" per entry, in order
        if (typeof error === 'string' && error !== '') this.noteRefusal(error);
        waiters.forEach((w, i) => this.tell(w, appended.charCodeAt(i) === 0x31 ? undefined : new AppError('unavailable')));
      },
      (e: unknown) => {
        this.answered(layoutId);
        for (const w of waiters) this.tell(w, e);
      },
    );
  }

  /** Tells a waiter it was stored (no `failure`) or not; one that throws is reported, and the rest of its batch are still told. */
  private tell(w: AppendWaiter, failure?: unknown): void {
    try {
      if (failure === undefined) w.stored();
      else w.failed(failure);
    } catch (e) {
      this.report(e);
    }
  }

  /** One of the stream's calls was answered: what waited goes out (after this turn's requests join it). */
  private answered(layoutId: string): void {
    const left = this.inFlight.get(layoutId)! - 1;
    if (left > 0) this.inFlight.set(layoutId, left);
    else this.inFlight.delete(layoutId);
    if (this.batches.has(layoutId)) this.scheduleFlush();
  }
}
