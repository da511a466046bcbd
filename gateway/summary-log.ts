// A log line per interval for events that can come thousands a second (refused requests, refused
// Redis writes): the first one is logged at once, the rest are counted and said in one line when
// the interval has passed, so a flood cannot fill the disk with log.
import type { Logger } from '../runtime/log.js';

export class SummaryLog {
  private counts = new Map<string, number>();
  private lastAt = -Infinity;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly log: Logger,
    private readonly level: 'warn' | 'error',
    /** what the line says, with `{count, ...}` of the interval */
    private readonly message: string,
    private readonly intervalMs = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts one event of `kind` (a bounded set: error codes, reasons). */
  count(kind: string, detail?: string): void {
    const at = this.now();
    if (at - this.lastAt >= this.intervalMs && this.counts.size === 0) {
      this.lastAt = at;
      this.log[this.level]({ kind, count: 1, ...(detail !== undefined && { detail }) }, this.message);
      return;
    }
    this.counts.set(kind, (this.counts.get(kind) ?? 0) + 1);
    this.timer ??= setTimeout(() => this.flush(), Math.max(0, this.lastAt + this.intervalMs - at));
    this.timer.unref();
  }

  /** Says what was counted since the last line (also called when the process stops). */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.counts.size === 0) return;
    this.lastAt = this.now();
    for (const [kind, count] of this.counts) this.log[this.level]({ kind, count, intervalMs: this.intervalMs }, this.message);
    this.counts = new Map();
  }
}
