// The plan's clock: work planned for moments on the run's clock (ms since its start), started as
// close to them as the event loop allows. How late each piece starts is the generator's schedule
// lag: recorded for every piece, and a piece later than the limit is counted as a late start.
import type { Metrics } from './metrics.js';

interface Item {
  at: number;
  run: () => void;
}

export class Schedule {
  private readonly heap: Item[] = [];
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private readonly t0 = performance.now();

  constructor(
    private readonly metrics: Metrics,
    private readonly lateMs: number,
  ) {}

  /** ms since the run started */
  now(): number {
    return performance.now() - this.t0;
  }

  /** Plans `run` for `at` (ms on the run's clock). */
  at(at: number, run: () => void): void {
    if (this.stopped) return;
    const heap = this.heap;
    heap.push({ at, run });
    for (let i = heap.length - 1; i > 0; ) {
      const parent = (i - 1) >> 1;
      if (heap[parent]!.at <= heap[i]!.at) break;
      [heap[parent], heap[i]] = [heap[i]!, heap[parent]!];
      i = parent;
    }
    if (heap[0]!.at === at) this.arm();
  }

  stop(): void {
    this.stopped = true;
    this.heap.length = 0;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private arm(): void {
    if (this.timer) clearTimeout(this.timer);
    const next = this.heap[0];
    this.timer = next ? setTimeout(() => this.due(), Math.max(0, next.at - this.now())) : null;
  }

  private due(): void {
    this.timer = null;
    const now = this.now();
    while (this.heap.length > 0 && this.heap[0]!.at <= now + 0.5) {
      const item = this.pop();
      const lag = Math.max(0, this.now() - item.at);
      this.metrics.record('schedule_lag_ms', lag);
      if (lag > this.lateMs) this.metrics.count('late_starts');
      item.run();
    }
    if (!this.stopped) this.arm();
  }

  private pop(): Item {
    const heap = this.heap;
    const top = heap[0]!;
    const last = heap.pop()!;
    if (heap.length > 0) {
      heap[0] = last;
      for (let i = 0; ; ) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < heap.length && heap[l]!.at < heap[m]!.at) m = l;
        if (r < heap.length && heap[r]!.at < heap[m]!.at) m = r;
        if (m === i) break;
        [heap[m], heap[i]] = [heap[i]!, heap[m]!];
        i = m;
      }
    }
    return top;
  }
}
