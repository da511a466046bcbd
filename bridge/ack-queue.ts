// Stream ids waiting for XACK, sent in one call per send tick, and never awaited by the tick: a
// round trip to Redis (slow, or timing out) must not hold the send schedule or the reader. One call
// is in flight at a time; what is added meanwhile goes with the next. A failed call keeps its ids for
// later calls, MAX_ACK_ATTEMPTS calls at most: then they are given up and counted. After a failure
// the next call waits ACK_RETRY_MS, then twice as long each time, so the calls of one id span about
// 4 s: with the link down every XACK fails at once (no offline queue), so retried every tick the
// acks of a cut of any length would be given up within milliseconds. A given-up id is
// harmless: it stays in the group's pending list, and when the bridge reads it again (after a
// restart, or through XAUTOCLAIM) its action id is known, so it is acked without being sent again.
import type { LayoutCounters } from './counters.js';
import type { Logger } from '../runtime/log.js';
import { SeenIds } from './seen-ids.js';

export const MAX_ACK_ATTEMPTS = 5;
/** the wait after a failed XACK call; each further failure doubles it (250, 500, 1000, 2000 ms) */
export const ACK_RETRY_MS = 250;
const LOG_EVERY_MS = 5000;

export class AckQueue {
  private fresh: string[] = [];
  /** ids whose XACK failed, with the attempts so far */
  private retries: { ids: string[]; attempts: number }[] = [];
  private lastLog = 0;
  private inFlight: Promise<void> | null = null;
  /** no call before this time (ms): backing off after a failed one */
  private retryAt = 0;
  /** every id given to this queue (at least the last 100,000): what this run settled */
  private readonly given = new SeenIds(100_000);

  constructor(
    private readonly ack: (streamIds: string[]) => Promise<void>,
    private readonly c: LayoutCounters,
    private readonly log: Logger,
    private readonly layoutId: string,
    private readonly now: () => number = Date.now,
  ) {}

  add(id: string): void {
    this.fresh.push(id);
    this.given.add(id);
  }

  /** Whether this id was given to the queue (settled by this run), acked or not. */
  has(id: string): boolean {
    return this.given.has(id);
  }

  /** True while ids wait to be acked. */
  get waiting(): boolean {
    return this.fresh.length > 0 || this.retries.length > 0;
  }

  /**
   * Starts one XACK for everything waiting, unless one is in flight or the queue is backing off
   * after a failure (then they wait for a later flush); `now` skips the back-off.
   */
  flush(now = false): void {
    if (this.inFlight || !this.waiting || (!now && this.now() < this.retryAt)) return;
    this.inFlight = this.send().finally(() => (this.inFlight = null));
  }

  /** Waits for the XACK in flight, then acks what is left (once: a failure stays queued). For stopping. */
  async drain(): Promise<void> {
    await this.inFlight;
    this.flush(true);
    await this.inFlight;
  }

  /** Never rejects. */
  private async send(): Promise<void> {
    const fresh = this.fresh;
    this.fresh = [];
    const ids = [...fresh, ...this.retries.flatMap((r) => r.ids)];
    try {
      await this.ack(ids);
      this.c.acked += ids.length;
      this.retries = [];
      this.retryAt = 0;
    } catch (e) {
      this.failed(fresh, e);
    }
  }

  private failed(fresh: string[], e: unknown): void {
    this.c.ackFailures++;
    const kept: { ids: string[]; attempts: number }[] = [];
    let abandoned = 0;
    for (const r of [...this.retries, ...(fresh.length > 0 ? [{ ids: fresh, attempts: 0 }] : [])]) {
      if (++r.attempts >= MAX_ACK_ATTEMPTS) abandoned += r.ids.length;
      else kept.push(r);
    }
    this.retries = kept;
    this.c.acksAbandoned += abandoned;
    const now = this.now();
    const attempts = Math.max(0, ...kept.map((r) => r.attempts));
    this.retryAt = attempts > 0 ? now + ACK_RETRY_MS * 2 ** (attempts - 1) : 0;
    if (abandoned > 0 || now - this.lastLog >= LOG_EVERY_MS) {
      this.lastLog = now;
      this.log.warn({ layoutId: this.layoutId, err: (e as Error).message, retrying: kept.reduce((n, r) => n + r.ids.length, 0), abandoned }, 'XACK failed; retrying on later ticks');
    }
  }
}
