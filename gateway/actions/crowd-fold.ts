// Crowd aggregation at the edge. For each aggregated control this process keeps each participant's
// (token `sub`'s) latest value for the control's window and, once per fold tick, appends one
// summary entry per control that changed (a new value, or one that left the window): mergeable
// figures (count, sums, a 0.01 histogram, votes per option), never one entry per action. An
// action's promise settles once the summary that contains it is stored, so its 200 comes at most
// one fold tick (and one Redis round trip) later. Redis load per aggregated control is bounded by
// fold ticks x gateway processes, whatever the crowd's size.
import { HIST_BINS, windowMsOf, type Aggregate, type AggregateMode, type CrowdSummary } from '../../schemas/aggregate.js';
import { encodeCrowdSummary } from '../../schemas/action-entry.js';
import type { ActionValue, Control } from '../../schemas/types.js';
import { AppError } from '../errors.js';
import type { ActionLog } from './action-log.js';
import { entryId } from './entry-id.js';

/** An aggregated control: what the fold needs of it. */
export type AggregatedControl = Control & { aggregate: Aggregate };

interface Waiter {
  resolve: () => void;
  reject: (e: unknown) => void;
}

/** One control's window in this process. */
class ControlWindow {
  /** each participant's latest value and when it came, oldest first (an update moves it to the end) */
  private readonly latest = new Map<string, { value: ActionValue; at: number }>();
  /** Button: press times within the window, oldest first, and each presser's last press */
  private readonly presses: number[] = [];
  private pressHead = 0;
  private readonly pressers = new Map<string, number>();
  private seq = 0;
  dirty = false;
  waiters: Waiter[] = [];

  constructor(
    readonly layoutId: string,
    readonly control: AggregatedControl,
    readonly windowMs: number,
  ) {}

  /** Nobody in the window (and the summary saying so is out, unless dirty). */
  summaryIsEmpty(): boolean {
    return this.latest.size === 0 && this.pressers.size === 0;
  }

  get mode(): AggregateMode {
    return this.control.aggregate.mode;
  }

  add(sub: string, value: ActionValue, at: number): void {
    if (this.mode === 'rate') {
      this.presses.push(at);
      this.pressers.delete(sub);
      this.pressers.set(sub, at);
    } else {
      this.latest.delete(sub);
      this.latest.set(sub, { value, at });
    }
    this.dirty = true;
  }

  /** Drops what left the window by `now`; marks the window changed if anything did. */
  expire(now: number): void {
    const from = now - this.windowMs;
    for (const [sub, v] of this.latest) {
      if (v.at > from) break;
      this.latest.delete(sub);
      this.dirty = true;
    }
    for (const [sub, at] of this.pressers) {
      if (at > from) break;
      this.pressers.delete(sub);
      this.dirty = true;
    }
    while (this.pressHead < this.presses.length && this.presses[this.pressHead]! <= from) this.pressHead++;
    if (this.pressHead > 1024 && this.pressHead * 2 > this.presses.length) {
      this.presses.splice(0, this.pressHead); // keeps the array from growing with every press ever made
      this.pressHead = 0;
    }
  }

  /** The mergeable figures of what is in the window now. */
  summary(source: string, now: number): CrowdSummary {
    const c = this.control;
    const head = {
      v: 2 as const,
      kind: 'summary' as const,
      id: entryId(),
      layoutId: this.layoutId,
      lid: c.lid,
      address: c.address,
      type: c.type as CrowdSummary['type'],
      mode: this.mode,
      windowMs: this.windowMs,
      source,
      seq: ++this.seq,
      ts: now,
    };
    const values = [...this.latest.values()].map((v) => v.value);
    switch (this.mode) {
      case 'rate':
        return { ...head, n: this.pressers.size, sum: this.presses.length - this.pressHead };
      case 'fraction':
        return { ...head, n: values.length, sum: values.filter((v) => v === true).length };
      case 'votes': {
        const votes = new Array<number>(c.options?.length ?? 0).fill(0);
        for (const v of values) votes[v as number]!++;
        return { ...head, n: values.length, votes };
      }
      case 'centroid': {
        let sumX = 0;
        let sumY = 0;
        for (const v of values) {
          sumX += (v as [number, number])[0];
          sumY += (v as [number, number])[1];
        }
        return { ...head, n: values.length, sumX, sumY };
      }
      default: {
        let sum = 0;
        let sumSq = 0;
        for (const v of values) {
          sum += v as number;
          sumSq += (v as number) * (v as number);
        }
        const s: CrowdSummary = { ...head, n: values.length, sum, sumSq };
        if (this.mode === 'mean') return s;
        const hist = new Array<number>(HIST_BINS).fill(0);
        const histSum = new Array<number>(HIST_BINS).fill(0);
        for (const v of values) {
          const b = Math.round((v as number) * (HIST_BINS - 1));
          hist[b]!++;
          histSum[b]! += v as number;
        }
        return this.mode === 'median' ? { ...s, hist } : { ...s, hist, histSum };
      }
    }
  }
}

export class CrowdFold {
  private readonly windows = new Map<string, ControlWindow>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly log: ActionLog,
    /** this gateway process, as summaries name it */
    private readonly source: string,
    /** the fold tick */
    private readonly foldMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts a participant's action; resolves once a summary holding it is stored. */
  add(layoutId: string, control: AggregatedControl, sub: string, value: ActionValue, at: number): Promise<void> {
    const key = `${layoutId}\u0000${control.lid}`;
    let w = this.windows.get(key);
    // a re-imported layout may change the control: its window starts again
    if (!w || w.control.aggregate.mode !== control.aggregate.mode || w.windowMs !== windowMsOf(control.aggregate) || w.control.address !== control.address || w.control.options?.length !== control.options?.length) {
      w = new ControlWindow(layoutId, control, windowMsOf(control.aggregate));
      this.windows.set(key, w);
    }
    w.add(sub, value, at);
    this.start();
    return new Promise((resolve, reject) => w.waiters.push({ resolve, reject }));
  }

  private start(): void {
    this.timer ??= setInterval(() => this.fold(), this.foldMs);
  }

  /** One fold tick: a summary for each control that changed, appended by the group commit. */
  fold(): void {
    const now = this.now();
    for (const [key, w] of this.windows) {
      w.expire(now);
      if (!w.dirty) {
        if (w.waiters.length === 0 && w.summaryIsEmpty()) this.windows.delete(key);
        continue;
      }
      w.dirty = false;
      const waiters = w.waiters;
      w.waiters = [];
      const summary = w.summary(this.source, now);
      this.log.appendPayload(w.layoutId, encodeCrowdSummary(summary)).then(
        () => waiters.forEach((x) => x.resolve()),
        (e: unknown) => waiters.forEach((x) => x.reject(e instanceof AppError ? e : new AppError('unavailable'))),
      );
    }
    if (this.windows.size === 0) this.stop();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
