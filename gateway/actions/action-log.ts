// Appends accepted actions to their layout's stream. The actions accepted for one layout in one
// event-loop turn go to Redis in a single Lua call (store/lua/appendActions-1.lua), each still its
// own stream entry. Every caller's promise settles once Redis answered that call, so the route
// answers 200 only for an action that is in the stream.
import type { RedisClient } from '../../runtime/redis.js';
import { ACTION_FIELD, encodeActionEntry } from '../../schemas/action-entry.js';
import type { ActionEntry } from '../../schemas/types.js';
import { AppError, orUnavailable } from '../errors.js';
import type { RedisKeys } from '../store/keys.js';
import { untimed, type RedisTimer } from '../store/redis.js';
import { runScript } from '../store/scripts.js';

const NEVER = () => false;
/** The answer to a request whose client left before its action was applied (no one reads it). */
const clientLeft = () => new AppError('unavailable', 'The client left before the action was applied.');

/** At most this many entries go in one Lua call, so one call never holds Redis for long. */
export const MAX_BATCH = 256;

interface Waiter {
  resolve: () => void;
  reject: (e: unknown) => void;
  /** the request's client is gone: its action is not appended (its answer could not be sent) */
  aborted: () => boolean;
}

interface Batch {
  readonly payloads: string[];
  readonly waiters: Waiter[];
}

export class ActionLog {
  /** the batches of this event-loop turn, by stream key */
  private readonly batches = new Map<string, Batch>();
  private flushScheduled = false;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    /** approximate trim length of each stream (MAXLEN ~) */
    private readonly maxLen: number,
    private readonly timed: RedisTimer = untimed,
  ) {}

  /**
   * Appends an action unless its Idempotency-Key was used before (one Lua call: the check, the XADD
   * and the record). Resolves once stored, or at once for a repeat of the same action; rejects with
   * `idempotency_key_reused` for a key used with another action, `unavailable` if Redis could not say.
   * Not batched: a client that sends the header pays one call per action.
   */
  appendOnce(entry: ActionEntry, recordKey: string, fingerprint: string, ttlSeconds: number, aborted: () => boolean = NEVER): Promise<void> {
    // sent after this turn, like the batch, so a request whose client left in this turn is not applied
    return new Promise<void>((r) => setImmediate(r)).then(() => {
      if (aborted()) throw clientLeft();
      return this.appendOnceNow(entry, recordKey, fingerprint, ttlSeconds);
    });
  }

  private appendOnceNow(entry: ActionEntry, recordKey: string, fingerprint: string, ttlSeconds: number): Promise<void> {
    const call = runScript(this.redis, 'appendOnce', [this.keys.actions(entry.layoutId), recordKey], [this.maxLen, ACTION_FIELD, encodeActionEntry(entry), fingerprint, ttlSeconds]);
    return orUnavailable(this.timed('append_once', call)).then((reply) => {
      const code = Array.isArray(reply) ? Number(reply[0]) : NaN;
      if (code === 2) throw new AppError('idempotency_key_reused');
      if (code !== 0 && code !== 1) throw new AppError('unavailable');
    });
  }

  /** Resolves once Redis has stored the entry; rejects with `unavailable` if it could not. */
  append(entry: ActionEntry, aborted: () => boolean = NEVER): Promise<void> {
    return new Promise((resolve, reject) => {
      const key = this.keys.actions(entry.layoutId);
      let batch = this.batches.get(key);
      if (!batch) {
        batch = { payloads: [], waiters: [] };
        this.batches.set(key, batch);
      }
      batch.payloads.push(encodeActionEntry(entry));
      batch.waiters.push({ resolve, reject, aborted });
      // setImmediate runs after the poll phase, so it gathers every request uWS handled in this turn.
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(this.flush);
      }
    });
  }

  private readonly flush = (): void => {
    this.flushScheduled = false;
    for (const [key, batch] of this.batches) {
      // A request whose client left in this turn (uWS closes a connection that pipelined requests
      // whose answers are still pending) is not applied: no action without its answer.
      let { payloads, waiters } = batch;
      if (waiters.some((w) => w.aborted())) {
        const keep = waiters.map((w) => !w.aborted());
        payloads = payloads.filter((_, i) => keep[i]);
        for (const w of waiters.filter((_, i) => !keep[i])) w.reject(clientLeft());
        waiters = waiters.filter((_, i) => keep[i]);
      }
      for (let i = 0; i < payloads.length; i += MAX_BATCH) {
        this.send(key, payloads.slice(i, i + MAX_BATCH), waiters.slice(i, i + MAX_BATCH));
      }
    }
    this.batches.clear();
  };

  private send(key: string, payloads: string[], waiters: Waiter[]): void {
    const call = runScript(this.redis, 'appendActions', [key], [this.maxLen, ACTION_FIELD, ...payloads]);
    orUnavailable(this.timed('append_actions', call)).then(
      (ids) => {
        const results = Array.isArray(ids) ? (ids as unknown[]) : [];
        waiters.forEach((w, i) => (typeof results[i] === 'string' ? w.resolve() : w.reject(new AppError('unavailable'))));
      },
      (e: unknown) => {
        for (const w of waiters) w.reject(e);
      },
    );
  }
}
