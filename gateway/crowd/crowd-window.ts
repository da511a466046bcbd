// One aggregated control's window in one gateway process: each participant's latest value (for a
// Button, each presser's last press and the presses in 10 ms buckets), the figures kept up to date as
// values come and go, and the summary made of them. Pure: no I/O, the clock passed in.
import type { Aggregate, AggregateMode, CrowdFigures, CrowdSummary } from '../../schemas/aggregate.js';
import type { ActionValue, Control } from '../../schemas/types.js';
import { ArrivalMap } from './arrival-map.js';
import { Figures, PressBuckets } from './crowd-figures.js';
import { entryId } from '../store/entry-id.js';

/** An aggregated control: what the fold needs of it. */
export type AggregatedControl = Control & { aggregate: Aggregate };

export interface Waiter {
  resolve: () => void;
  reject: (e: unknown) => void;
  /** the action's value stops counting (its summary could not be stored); null: it stays (a press) */
  undo: (() => void) | null;
}

export { PRESS_BUCKET_MS } from './crowd-figures.js';
/** A participant's presses of one Button that count in one second, at most: a phone mashing faster adds nothing. */
export const PRESSES_PER_SECOND_MAX = 10;
/**
 * A process holding participants appends each control's summary at least this often, changed or
 * not: the bridge takes a source silent for CROWD_LEASE_MS (schemas/aggregate.ts) for gone.
 */
export const LEASE_REFRESH_MS = 1000;
/**
 * A control's summary is published to the live channel at most this often per process (stored
 * ones only; the newest held back goes out when the time comes): phones get crowd frames at most
 * 4 times a second.
 */
export const PUBLISH_MIN_MS = 250;

/** A participant's latest value in one control's window, when it came, its zone ('' none), and when the token it came with was minted. */
interface Held {
  value: ActionValue;
  at: number;
  zone: string;
  minted: number;
}

/** Whether a participant's token is revoked now: its sub, and when the token it last acted with was minted (ms). */
export type Revoked = (sub: string, minted: number) => boolean;

/**
 * What one participant holds in one control's window, as a process hands it to the process the
 * participant moved to: its latest value (a Button: its last press and how many counted in that
 * second), when, and its zone.
 */
export interface HandedValue {
  lid: number;
  at: number;
  zone: string;
  /** when the participant's token was minted (absent from an older process: taken as `at`, a bound on it) */
  minted?: number;
  value?: ActionValue;
  second?: number;
  inSecond?: number;
}

/** One control's window in this process. */
export class ControlWindow {
  /** each participant's latest value, oldest first (an update moves it to the end) */
  private readonly latest = new ArrivalMap<Held>();
  private readonly figures: Figures;
  /** the same figures per zone, for the zones that hold someone */
  private readonly zoneFigures = new Map<string, Figures>();
  /** Button: presses per zone, and pressers per zone */
  private readonly zonePresses = new Map<string, PressBuckets>();
  private readonly zonePressers = new Map<string, number>();
  /** Button: press times within the window, oldest first, and each presser's last press */
  private readonly presses = new PressBuckets();
  private readonly pressers = new ArrivalMap<Presser>();
  private seq = 0;
  dirty = false;
  /** when the last summary was made (the lease is refreshed from it) */
  summarisedAt = -Infinity;
  /** the last summary counted someone (a graceful stop retracts it) */
  counted = false;
  /** how long after the last summary the next may go (LARGE_SUMMARY_MS after a large one) */
  pauseMs = 0;
  waiters: Waiter[] = [];
  /** when this window's summary was last published to the live channel, which seq, and the newer one held back */
  publishedAt = -Infinity;
  publishedSeq = 0;
  unpublished: { seq: number; payload: string } | null = null;

  constructor(
    readonly layoutId: string,
    public control: AggregatedControl,
    readonly windowMs: number,
    /** participants held at most; past it the one whose value is oldest leaves first */
    private readonly maxParticipants: number,
    /** told of each participant pushed out by the cap */
    private readonly onEvicted: () => void,
  ) {
    this.figures = new Figures(control.type, control.options?.length ?? 0);
  }

  /**
   * Whether the window counts anything: participants, or presses made here by participants who
   * have moved to another process since (they stay counted here until they leave the window, so
   * their summary's lease is refreshed as long as theirs would be). One that counts nothing, and
   * whose summary saying so is out, is dropped.
   */
  counts(): boolean {
    return this.latest.size > 0 || this.pressers.size > 0 || this.presses.total > 0;
  }

  get mode(): AggregateMode {
    return this.control.aggregate.mode;
  }

  /**
   * Counts the participant's value; returns what takes it back out if its summary cannot be
   * stored (its answer is then an error, so it must not count): null for a press, which is a
   * moment, not a state, and stays counted.
   */
  add(sub: string, value: ActionValue, at: number, zone = '', minted = at): (() => void) | null {
    if (this.mode === 'rate') {
      const second = Math.floor(at / 1000);
      const prev = this.pressers.get(sub);
      const inSecond = prev && prev.second === second ? prev.inSecond : 0;
      if (inSecond >= PRESSES_PER_SECOND_MAX) return null; // answered, not counted: one phone cannot applaud for a hall
      if (prev) {
        this.pressers.take(sub);
        this.countPresser(prev.zone, -1);
      } else if (this.pressers.size >= this.maxParticipants) {
        const oldest = this.evictOldest(this.pressers);
        if (oldest) this.countPresser(oldest.zone, -1);
      }
      this.pressers.append(sub, { at, second, inSecond: inSecond + 1, zone, minted });
      this.countPresser(zone, 1);
      this.presses.add(at);
      if (zone !== '') {
        let z = this.zonePresses.get(zone);
        if (!z) this.zonePresses.set(zone, (z = new PressBuckets()));
        z.add(at);
      }
    } else {
      const prev = this.latest.take(sub);
      if (prev) this.count(prev, -1);
      else if (this.latest.size >= this.maxParticipants) {
        const oldest = this.evictOldest(this.latest);
        if (oldest) this.count(oldest, -1);
      }
      const held = { value, at, zone, minted };
      this.latest.append(sub, held);
      this.count(held, 1);
      this.dirty = true;
      return () => this.undo(sub, held, prev);
    }
    this.dirty = true;
    return null;
  }

  /**
   * A value whose summary was refused leaves: the participant holds what it held before (if that
   * is still in the window, the next expire says). Unless it holds a newer value by now, or moved.
   */
  private undo(sub: string, held: Held, prev: Held | undefined): void {
    if (this.latest.get(sub) !== held) return;
    this.latest.take(sub);
    this.count(held, -1);
    if (prev) {
      this.latest.place(sub, prev, this.windowMs);
      this.count(prev, 1);
    }
    this.dirty = true;
  }

  /**
   * The participant moved to another process: it leaves this window (a Button's presses made here
   * stay counted: they happened once, here), and what it held is returned for that process.
   */
  release(sub: string): HandedValue | null {
    const lid = this.control.lid;
    if (this.mode === 'rate') {
      const p = this.pressers.take(sub);
      if (!p) return null;
      this.countPresser(p.zone, -1);
      this.dirty = true;
      return { lid, at: p.at, zone: p.zone, minted: p.minted, second: p.second, inSecond: p.inSecond };
    }
    const v = this.latest.take(sub);
    if (!v) return null;
    this.count(v, -1);
    if (this.latest.size === 0) this.figures.reset();
    this.dirty = true;
    return { lid, at: v.at, zone: v.zone, minted: v.minted, value: v.value };
  }

  /**
   * What the participant held in this control on the process it came from: counted here with the
   * time it came, unless the participant acted on this control here since (that value is newer).
   * Returns whether it was taken.
   */
  adopt(sub: string, h: HandedValue, now: number): boolean {
    if (h.at <= now - this.windowMs) return false; // it left the window meanwhile
    if (this.mode === 'rate') {
      if (this.pressers.get(sub) || h.second === undefined || h.inSecond === undefined) return false;
      if (this.pressers.size >= this.maxParticipants) return false;
      this.pressers.place(sub, { at: h.at, second: h.second, inSecond: h.inSecond, zone: h.zone, minted: h.minted ?? h.at }, this.windowMs);
      this.countPresser(h.zone, 1);
    } else {
      if (this.latest.get(sub) || h.value === undefined || this.latest.size >= this.maxParticipants) return false;
      const held = { value: h.value, at: h.at, zone: h.zone, minted: h.minted ?? h.at };
      this.latest.place(sub, held, this.windowMs);
      this.count(held, 1);
    }
    this.dirty = true;
    return true;
  }

  /**
   * The participants whose tokens are revoked leave (a Button's presses made stay counted in their
   * second: they happened). Returns how many left.
   */
  revoke(revoked: Revoked): number {
    let left = 0;
    this.pressers.takeWhere((sub, p) => revoked(sub, p.minted), (_sub, p) => {
      this.countPresser(p.zone, -1);
      left++;
    });
    this.latest.takeWhere((sub, v) => revoked(sub, v.minted), (_sub, v) => {
      this.count(v, -1);
      left++;
    });
    if (left === 0) return 0;
    if (this.latest.size === 0) this.figures.reset();
    this.dirty = true;
    return left;
  }

  /** Counts a participant's value in or out of the whole crowd and its zone. */
  private count(v: { value: ActionValue; zone: string }, sign: 1 | -1): void {
    this.figures.apply(v.value, sign);
    if (v.zone === '') return;
    let z = this.zoneFigures.get(v.zone);
    if (!z) this.zoneFigures.set(v.zone, (z = new Figures(this.control.type, this.control.options?.length ?? 0)));
    z.apply(v.value, sign);
    if (z.n === 0) this.zoneFigures.delete(v.zone); // empty: gone, and exactly zero when it comes back
  }

  private countPresser(zone: string, sign: 1 | -1): void {
    if (zone === '') return;
    const n = (this.zonePressers.get(zone) ?? 0) + sign;
    if (n > 0) this.zonePressers.set(zone, n);
    else this.zonePressers.delete(zone);
  }

  /** Forgets the participant whose latest action is the oldest (the first of the map), returning what it held. */
  private evictOldest<V extends { at: number }>(map: ArrivalMap<V>): V | undefined {
    const oldest = map.takeOldest();
    if (oldest) this.onEvicted();
    return oldest?.[1];
  }

  /** Participants held now. */
  get participants(): number {
    return this.mode === 'rate' ? this.pressers.size : this.latest.size;
  }

  /** Drops what left the window by `now`; marks the window changed if anything did. */
  expire(now: number): void {
    const from = now - this.windowMs;
    this.latest.expire(from, this.windowMs, (_sub, v) => {
      this.count(v, -1);
      this.dirty = true;
      if (this.latest.size === 0) this.figures.reset(); // empty: exactly zero again, whatever rounding was left
    });
    this.pressers.expire(from, this.windowMs, (_sub, { zone }) => {
      this.countPresser(zone, -1);
      this.dirty = true;
    });
    const pressed = this.presses.total;
    this.presses.expire(from);
    // the last presses of pressers who moved on left: zero now, not at the lease's end (while pressers
    // are here, their own leaving says it; their presses leave up to a bucket before them)
    if (pressed > 0 && this.presses.total === 0 && this.pressers.size === 0) this.dirty = true;
    for (const [zone, z] of this.zonePresses) {
      z.expire(from);
      if (z.total === 0 && !this.zonePressers.has(zone)) this.zonePresses.delete(zone);
    }
  }

  /** The mergeable figures of what is in the window now (`empty`: nobody, to retract this process's share). */
  summary(source: string, now: number, empty = false): CrowdSummary {
    const c = this.control;
    const f = empty ? new Figures(c.type, c.options?.length ?? 0) : this.figures;
    this.summarisedAt = now;
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
    const cue = c.aggregate.cue ? { cue: c.aggregate.cue } : {};
    if (empty) return { ...head, ...cue, ...this.figuresOf(f, 0, 0) };
    const zones: Record<string, CrowdFigures> = {};
    if (this.mode === 'rate') for (const [zone, n] of this.zonePressers) zones[zone] = this.figuresOf(f, n, this.zonePresses.get(zone)?.total ?? 0);
    else for (const [zone, z] of this.zoneFigures) zones[zone] = this.figuresOf(z, 0, 0);
    const whole = this.figuresOf(f, this.pressers.size, this.presses.total);
    return { ...head, ...cue, ...whole, ...(Object.keys(zones).length > 0 && { zones }) };
  }

  /** The mergeable figures of one set of values (for `rate`: `pressers` who pressed `presses` times). */
  private figuresOf(f: Figures, pressers: number, presses: number): CrowdFigures {
    switch (this.mode) {
      case 'rate':
        return { n: pressers, sum: presses };
      case 'fraction':
        return { n: f.n, sum: f.sum };
      case 'votes':
        return { n: f.n, votes: [...f.votes] };
      case 'centroid':
        return { n: f.n, sumX: f.sumX, sumY: f.sumY };
      case 'mean':
        return { n: f.n, sum: f.sum, sumSq: Math.max(0, f.sumSq) };
      case 'median':
        return { n: f.n, sum: f.sum, sumSq: Math.max(0, f.sumSq), hist: [...f.hist] };
      default:
        return { n: f.n, sum: f.sum, sumSq: Math.max(0, f.sumSq), hist: [...f.hist], histSum: [...f.histSum] };
    }
  }
}

/** A participant's presses of one Button: the last one, and how many counted in its second. */
interface Presser {
  at: number;
  minted: number;
  second: number;
  inSecond: number;
  /** the presser's zone ('' none) */
  zone: string;
}
