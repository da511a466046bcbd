// Crowd aggregation at the edge. For each aggregated control this process keeps each participant's
// (token `sub`'s) latest value for the control's window (crowd-window.ts) and, once per fold tick,
// appends one summary entry per control that changed (a new value, or one that left the window):
// mergeable figures (count, sums, a 0.01 histogram, votes per option), never one entry per action.
// An action's promise settles once the summary that contains it is stored, so its 200 comes at most
// one fold tick (and one Redis round trip) later. Redis load per aggregated control is bounded by
// fold ticks x gateway processes, whatever the crowd's size. Summaries are leases: refreshed every
// LEASE_REFRESH_MS while a window counts anything (participants, or presses made here by participants
// who moved on), retracted when the process stops.
import { windowMsOf, type CrowdSummary } from '../../schemas/aggregate.js';
import { encodeCrowdSummary } from '../../schemas/action-entry.js';
import type { ActionValue } from '../../schemas/types.js';
import { AppError } from '../errors.js';
import { ControlWindow, LEASE_REFRESH_MS, PUBLISH_MIN_MS, type AggregatedControl, type HandedValue, type Revoked } from './crowd-window.js';

export { LEASE_REFRESH_MS, PRESSES_PER_SECOND_MAX, PRESS_BUCKET_MS, type AggregatedControl, type HandedValue } from './crowd-window.js';

/** Whether a window still fits its control (a re-import may have changed type, mode, window, address or options). */
function sameShape(w: ControlWindow, c: AggregatedControl): boolean {
  const was = w.control;
  return was.type === c.type && was.aggregate.mode === c.aggregate.mode && w.windowMs === windowMsOf(c.aggregate) && was.address === c.address && was.options?.length === c.options?.length;
}

/** A summary longer than this (a vote of many options, a histogram) is appended at most every LARGE_SUMMARY_MS. */
export const LARGE_SUMMARY_CHARS = 1024;
export const LARGE_SUMMARY_MS = 100;

export interface CrowdFoldOptions {
  /** participants one control holds in this process; past it the oldest leaves */
  maxParticipants?: number;
  /** told of each participant the cap pushed out */
  onEvicted?: () => void;
  /** publishes a stored summary to the layout's live channel (at most every PUBLISH_MIN_MS per control) */
  publish?: (layoutId: string, payload: string) => void;
  now?: () => number;
}

export class CrowdFold {
  private readonly windows = new Map<string, ControlWindow>();
  private timer: NodeJS.Timeout | null = null;
  private readonly now: () => number;
  private readonly maxParticipants: number;
  private readonly onEvicted: () => void;
  private readonly publish: (layoutId: string, payload: string) => void;

  constructor(
    /** where a summary is appended: the layout's stream, in the actions' group commit (actions/action-log.ts) */
    private readonly log: { appendPayload(layoutId: string, payload: string): Promise<void> },
    /** this gateway process, as summaries name it */
    private readonly source: string,
    /** the fold tick */
    private readonly foldMs: number,
    options: CrowdFoldOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.maxParticipants = options.maxParticipants ?? 100_000;
    this.onEvicted = options.onEvicted ?? (() => {});
    this.publish = options.publish ?? (() => {});
  }

  /**
   * Counts a participant's action (in its zone, '' for none; `minted`: when its token was minted, so
   * that a revocation finds it); resolves once a summary holding it is stored.
   */
  add(layoutId: string, control: AggregatedControl, sub: string, value: ActionValue, at: number, zone = '', minted = at): Promise<void> {
    const w = this.windowOf(layoutId, control);
    const undo = w.add(sub, value, at, zone, minted);
    this.start();
    return new Promise((resolve, reject) => w.waiters.push({ resolve, reject, undo }));
  }

  /** The control's window in this process, made (or made again, for a control a re-import changed) as needed. */
  private windowOf(layoutId: string, control: AggregatedControl): ControlWindow {
    const key = `${layoutId}\u0000${control.lid}`;
    let w = this.windows.get(key);
    if (!w || !sameShape(w, control)) {
      // a re-imported layout changed the control: its window starts again, and the actions still
      // waiting for the old one's summary are answered with the new one's
      const waiting = w?.waiters ?? [];
      w = new ControlWindow(layoutId, control, windowMsOf(control.aggregate), this.maxParticipants, this.onEvicted);
      w.waiters = waiting;
      this.windows.set(key, w);
    }
    else w.control = control; // the same shape; its cue (or a label) may have changed with a re-import
    return w;
  }

  /**
   * The participant now counts on another process: it leaves every window of the layout here (the
   * next fold tick's summaries say so), and what it held is returned, for that process to adopt.
   */
  release(layoutId: string, sub: string): HandedValue[] {
    const handed: HandedValue[] = [];
    for (const w of this.windows.values()) {
      if (w.layoutId !== layoutId) continue;
      const h = w.release(sub);
      if (h) handed.push(h);
    }
    return handed;
  }

  /**
   * What a participant that moved here held on the process it left, counted here with the times it
   * came (a control it acted on here since keeps its newer value). `controlOf` finds a control by lid.
   */
  adopt(layoutId: string, sub: string, handed: readonly HandedValue[], controlOf: (lid: number) => AggregatedControl | undefined): void {
    const now = this.now();
    for (const h of handed) {
      const control = controlOf(h.lid);
      if (control && this.windowOf(layoutId, control).adopt(sub, h, now)) this.start();
    }
  }

  /**
   * Tokens of the layout were revoked (its cut-off moved, or participants were revoked): the
   * participants they revoke leave every window of the layout here, and the next fold tick tells the
   * bridge. Returns how many values left.
   */
  revoke(layoutId: string, revoked: Revoked): number {
    let left = 0;
    for (const w of this.windows.values()) if (w.layoutId === layoutId) left += w.revoke(revoked);
    return left;
  }

  /** The layouts this process counts participants of. */
  layouts(): Set<string> {
    return new Set([...this.windows.values()].map((w) => w.layoutId));
  }

  private start(): void {
    this.timer ??= setInterval(() => this.fold(), this.foldMs);
  }

  /**
   * One fold tick: a summary for each control that changed, and for each that holds participants
   * and has not refreshed its lease for LEASE_REFRESH_MS, appended by the group commit.
   */
  fold(): void {
    const now = this.now();
    for (const [key, w] of this.windows) {
      if (w.unpublished && now - w.publishedAt >= PUBLISH_MIN_MS) this.published(w, w.unpublished.seq, w.unpublished.payload, now);
      w.expire(now);
      const leaseDue = w.counts() && now - w.summarisedAt >= LEASE_REFRESH_MS;
      if (!w.dirty && !leaseDue) {
        if (w.waiters.length === 0 && !w.counts() && !w.unpublished) this.windows.delete(key);
        continue;
      }
      if (now < w.summarisedAt + w.pauseMs) continue; // a large summary waits its turn; its actions wait with it
      w.dirty = false;
      void this.append(w, w.summary(this.source, now)); // never rejects: its actions are told
    }
    if (this.windows.size === 0) this.stop();
  }

  /**
   * A stored summary goes to the live channel, unless one went out less than PUBLISH_MIN_MS ago
   * (then the newest waits for the next fold tick past it); `force` for a retraction.
   */
  private published(w: ControlWindow, seq: number, payload: string, now: number, force = false): void {
    if (seq <= w.publishedSeq) return; // an older summary stored late: a newer one is out
    if (!force && now - w.publishedAt < PUBLISH_MIN_MS) {
      w.unpublished = { seq, payload };
      return;
    }
    w.unpublished = null;
    w.publishedAt = now;
    w.publishedSeq = seq;
    this.publish(w.layoutId, payload);
  }

  /** Appends one window's summary and answers the actions it holds once it is stored (and publishes it). */
  private append(w: ControlWindow, summary: CrowdSummary, force = false): Promise<void> {
    const waiters = w.waiters;
    w.waiters = [];
    let payload: string;
    try {
      payload = encodeCrowdSummary(summary);
    } catch (e) {
      // a bug, not the crowd's fault: these actions get a 500 and the fold goes on
      for (const x of waiters) x.reject(e);
      return Promise.resolve();
    }
    w.counted = summary.n > 0 || (summary.mode === 'rate' && (summary.sum ?? 0) > 0);
    w.pauseMs = payload.length > LARGE_SUMMARY_CHARS ? LARGE_SUMMARY_MS : 0;
    return this.log.appendPayload(w.layoutId, payload).then(
      () => {
        waiters.forEach((x) => x.resolve());
        this.published(w, summary.seq, payload, this.now(), force);
      },
      (e: unknown) => {
        // refused, so not counted: the newest first, so each participant gets back what it held before them all
        for (const x of [...waiters].reverse()) x.undo?.();
        waiters.forEach((x) => x.reject(e instanceof AppError ? e : new AppError('unavailable')));
      },
    );
  }

  /** Participants held by this process, over every control (the gauge of crowd memory). */
  participants(): number {
    let n = 0;
    for (const w of this.windows.values()) n += w.participants;
    return n;
  }

  /**
   * Stops folding and retracts this process's share of every crowd: what is pending is appended,
   * then an empty summary for each control whose last summary counted someone, so the bridge stops
   * counting this process at once instead of when its lease runs out. Resolves once Redis answered.
   */
  async retract(): Promise<void> {
    this.stop();
    const now = this.now();
    const appends: Promise<void>[] = [];
    for (const w of this.windows.values()) {
      if (w.dirty || w.waiters.length > 0) appends.push(this.append(w, w.summary(this.source, now)));
      if (w.counted) appends.push(this.append(w, w.summary(this.source, now, true), true));
    }
    this.windows.clear();
    await Promise.allSettled(appends);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
