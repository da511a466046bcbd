// A send loop's schedule: runs `tick` tickHz times a second, each tick due at a fixed offset from
// the start (drift-corrected) and waited for on the tick clock (tick-clock.ts). A loop that overran
// skips the ticks it missed instead of bursting. A tick that throws is reported and the loop goes
// on; `failure()` says for how long ticks have failed until one succeeds. A reader with work left
// yields to a due tick (`due()`, `afterNext()`), so reads never hold the send schedule up.
import { sleepUntil, tickClockReady, wakeDue } from './tick-clock.js';

export interface TickLoopHooks {
  /** how late a tick started, in ms (0 when on time) */
  late(ms: number): void;
  /** a tick threw */
  failed(e: unknown): void;
  /** the clock `failure()` measures in (ms) */
  now(): number;
}

export class TickLoop {
  /** when the next tick is due (performance.now() time) */
  nextDue = Infinity;
  private running = false;
  private loop: Promise<void> | null = null;
  private waiters: (() => void)[] = [];
  private failingSince: number | null = null;
  private lastError = '';

  constructor(
    private readonly tickHz: number,
    private readonly tick: () => Promise<void>,
    private readonly hooks: TickLoopHooks,
  ) {}

  /** True when a tick is due or running: a reader with work left checks it before each entry. */
  due(): boolean {
    return this.running && performance.now() >= this.nextDue;
  }

  /**
   * Resolves once the next tick has run: a reader with work left lets the send schedule go first.
   * A tick already due is started at once (the reader is awake and keeps the time itself: the
   * clock's thread, woken on a core this thread keeps busy, was late by up to 10 ms at the 99th
   * percentile while draining a backlog at 100 Hz in bench -- bridge). The reader never waits for a
   * tick in idle turns: that took 30 % of the core at 1,000 Hz and made the young generation fill faster.
   */
  afterNext(): Promise<void> {
    const ran = new Promise<void>((r) => this.waiters.push(r));
    if (this.due()) wakeDue();
    return ran;
  }

  /** Since when, and with what error, ticks have failed (null while they succeed). */
  failure(): { forMs: number; error: string } | null {
    return this.failingSince === null ? null : { forMs: this.hooks.now() - this.failingSince, error: this.lastError };
  }

  /** One tick now; a throw is reported, never passed on. */
  async runOnce(): Promise<void> {
    try {
      await this.tick();
      this.failingSince = null;
    } catch (e) {
      this.lastError = (e as Error).message;
      this.failingSince ??= this.hooks.now();
      this.hooks.failed(e);
    }
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    const period = 1000 / this.tickHz;
    let n = 0;
    this.loop = (async () => {
      await tickClockReady(); // its thread starts in about 15 ms: the schedule begins once it keeps time
      const started = performance.now();
      while (this.running) {
        const due = started + ++n * period;
        this.nextDue = due;
        const late = performance.now() - due;
        if (late < 0) await sleepUntil(due);
        else n += Math.floor(late / period); // overran: skip the missed ticks instead of bursting
        if (!this.running) break;
        this.hooks.late(Math.max(0, performance.now() - due));
        await this.runOnce();
        this.releaseWaiters();
      }
      this.releaseWaiters(); // no tick will come: a waiting reader goes on
    })();
  }

  /** Stops the schedule once the tick under way (if any) has run. */
  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  private releaseWaiters(): void {
    for (const w of this.waiters.splice(0)) w();
  }
}
