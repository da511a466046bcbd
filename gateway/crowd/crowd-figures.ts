// What a crowd window keeps up to date as values come and go: the mergeable figures of a set of
// values (count, sums, a histogram, votes per option), and a Button's presses in 10 ms buckets.
// Pure: no I/O, no clock.
import { HIST_BINS } from '../../schemas/aggregate.js';
import type { ActionValue, ControlType } from '../../schemas/types.js';

/** Presses are counted in buckets of this many ms: a press leaves the window up to this much early. */
export const PRESS_BUCKET_MS = 10;

/**
 * What is in a window, kept up to date as values come and go (O(1) an action, O(bins) a summary).
 * A float sum keeps a rounding error of about 1e-16 per add or remove (a million changes move a
 * mean by about 1e-10); it starts again from exactly 0 whenever the window empties.
 */
export class Figures {
  n = 0;
  sum = 0;
  sumSq = 0;
  sumX = 0;
  sumY = 0;
  readonly hist = new Array<number>(HIST_BINS).fill(0);
  readonly histSum = new Array<number>(HIST_BINS).fill(0);
  readonly votes: number[];

  constructor(
    private readonly type: ControlType,
    options: number,
  ) {
    this.votes = new Array<number>(options).fill(0);
  }

  /** Counts a value in (sign 1) or out (sign -1). */
  apply(value: ActionValue, sign: 1 | -1): void {
    this.n += sign;
    switch (this.type) {
      case 'Toggle':
        if (value === true) this.sum += sign;
        return;
      case 'Index':
        this.votes[value as number]! += sign; // an option index: checked against the layout before it gets here
        return;
      case 'XYPad':
        this.sumX += sign * (value as [number, number])[0];
        this.sumY += sign * (value as [number, number])[1];
        return;
      case 'Slider': {
        const v = value as number;
        this.sum += sign * v;
        this.sumSq += sign * v * v;
        const b = Math.round(v * (HIST_BINS - 1));
        this.hist[b]! += sign;
        this.histSum[b]! += sign * v;
        return;
      }
      default:
        return; // Button presses are counted by the window itself
    }
  }

  reset(): void {
    this.n = this.sum = this.sumSq = this.sumX = this.sumY = 0;
    this.hist.fill(0);
    this.histSum.fill(0);
    this.votes.fill(0);
  }
}

/**
 * Button presses within a window, counted per PRESS_BUCKET_MS bucket, so memory is bounded by the
 * window (at most 60,000 buckets for 10 minutes) however fast anyone presses.
 */
export class PressBuckets {
  /** [bucket number, presses in it], oldest first */
  private readonly buckets: [number, number][] = [];
  private head = 0;
  total = 0;

  add(at: number): void {
    const bucket = Math.floor(at / PRESS_BUCKET_MS);
    const last = this.buckets[this.buckets.length - 1];
    if (last && last[0] >= bucket) last[1]++; // the same bucket (or a clock step back): counted with the newest
    else this.buckets.push([bucket, 1]);
    this.total++;
  }

  /** Drops the buckets that began at or before `from`. */
  expire(from: number): void {
    while (this.head < this.buckets.length && this.buckets[this.head]![0] * PRESS_BUCKET_MS <= from) this.total -= this.buckets[this.head++]![1];
    if (this.head > 1024 && this.head * 2 > this.buckets.length) {
      this.buckets.splice(0, this.head);
      this.head = 0;
    }
  }
}
