// Crowd aggregation as a layout declares it: which modes fit which control type, and the limits of
// a window. The layout importer refuses what does not fit; the gateway folds and the bridge merges
// by the same table.
import type { Aggregate, AggregateMode, ControlType } from './types.js';
import { cueProblem, type CueSettings } from './crowd-cue.js';

export type { Aggregate, AggregateMode } from './types.js';

/** The modes each control type takes (String takes none). */
export const MODES_BY_TYPE: Readonly<Record<ControlType, readonly AggregateMode[]>> = {
  Slider: ['mean', 'median', 'trimmed-mean'],
  Toggle: ['fraction'],
  Index: ['votes'],
  XYPad: ['centroid'],
  Button: ['rate'],
  String: [],
};

export const WINDOW_MS_MIN = 100;
export const WINDOW_MS_MAX = 600_000;
/**
 * How long a participant's latest value counts when a control names no `windowMs`, by mode: as
 * long as a show expects the gesture to mean something. A press is a moment (rate: presses a
 * second); a slider or pad position is held while the hand rests (5 s); a switch stays where it was
 * put (10 s); a vote stands for a voting round (60 s), so it does not vanish a second after it was
 * cast.
 */
export const WINDOW_MS_DEFAULTS: Readonly<Record<AggregateMode, number>> = {
  rate: 1000,
  mean: 5000,
  median: 5000,
  'trimmed-mean': 5000,
  centroid: 5000,
  fraction: 10_000,
  votes: 60_000,
};

export function windowMsOf(a: Aggregate): number {
  return a.windowMs ?? WINDOW_MS_DEFAULTS[a.mode];
}

/**
 * Why a control's `aggregate` is refused (a sentence naming what is allowed), or null. Takes any
 * input: the importer asks before the schema check so the message can name the control's type.
 */
export function aggregateProblem(type: unknown, aggregate: unknown): string | null {
  if (typeof aggregate !== 'object' || aggregate === null || Array.isArray(aggregate)) return 'aggregate must be an object {"mode": ..., "windowMs": ...}';
  const { mode, windowMs, cue, ...rest } = aggregate as Record<string, unknown>;
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) return `aggregate has an unknown field "${unknown}" (allowed: mode, windowMs, cue)`;
  const allowed = typeof type === 'string' && type in MODES_BY_TYPE ? MODES_BY_TYPE[type as ControlType] : null;
  if (allowed && allowed.length === 0) return `a ${String(type)} control takes no aggregate`;
  if (allowed && !allowed.includes(mode as AggregateMode)) {
    return `aggregate mode ${JSON.stringify(mode)} does not fit a ${String(type)} control; allowed: ${allowed.join(', ')}`;
  }
  if (windowMs !== undefined && (typeof windowMs !== 'number' || !Number.isInteger(windowMs) || windowMs < WINDOW_MS_MIN || windowMs > WINDOW_MS_MAX)) {
    return `aggregate windowMs must be an integer from ${WINDOW_MS_MIN} to ${WINDOW_MS_MAX} (100 ms to 10 minutes); got ${JSON.stringify(windowMs)}`;
  }
  return cue === undefined ? null : cueProblem(mode, cue);
}

/** "median of each participant's latest value over 1,000 ms", for people. */
export function describeAggregate(a: Aggregate): string {
  const w = windowMsOf(a);
  const over = w % 1000 === 0 ? `${w / 1000} s` : `${w} ms`;
  const what: Record<AggregateMode, string> = {
    mean: 'mean',
    median: 'median',
    'trimmed-mean': 'trimmed mean (10 % off each end)',
    fraction: 'share switched on',
    votes: 'votes per option',
    centroid: 'centroid',
    rate: 'presses per second',
  };
  const crowd = a.mode === 'rate' ? `${what.rate} over ${over}` : `${what[a.mode]} of each participant's latest value over ${over}`;
  return a.cue ? `${crowd}; ${describeCue(a.mode, a.cue)}` : crowd;
}

/** "cue: the winning option once it holds 60 % of the votes (10 voters at least) for 500 ms, once until re-armed", for people. */
export function describeCue(mode: AggregateMode, c: CueSettings): string {
  const quorum = `${c.quorum ?? 1} counted at least`;
  const hold = `held ${c.holdMs ?? 0} ms`;
  if (mode === 'votes') return `cue: the winning option once it has ${Math.round((c.share ?? 1) * 1000) / 10} % of the votes (${quorum}, ${hold}), once until re-armed`;
  return `cue: 1 at or above ${c.above}, then 0 at or below ${c.below} (${quorum}, ${hold})`;
}

/** The 0.01 bins of a Slider median or trimmed mean: bin b holds the values that round to b / 100. */
export const HIST_BINS = 101;
/** A trimmed mean drops this share of the participants at each end. */
export const TRIM_SHARE = 0.1;

/**
 * The bridge counts a source's summary until min(ts + windowMs, ts + CROWD_LEASE_MS): a gateway
 * process holding participants refreshes its summaries every second, so one that died stops
 * counting within about 3 s (a process that stops gracefully retracts its share at once).
 */
export const CROWD_LEASE_MS = 3000;

/** When a summary stops counting in the bridge. */
export function summaryExpiresAt(s: Pick<CrowdSummary, 'ts' | 'windowMs'>): number {
  return s.ts + Math.min(s.windowMs, CROWD_LEASE_MS);
}

/** The sparse form of a summary's bins on the wire: `len` bins, the non-zero ones at `at` with values `v`. */
export interface SparseBins {
  len: number;
  at: number[];
  v: number[];
}

/** Bins as they go on the wire: sparse when fewer than a third are non-zero (a vote of 1,000 options, most unchosen). */
export function compactBins(bins: readonly number[]): number[] | SparseBins {
  let nonZero = 0;
  for (const b of bins) if (b !== 0) nonZero++;
  if (nonZero * 3 >= bins.length) return [...bins];
  const at: number[] = [];
  const v: number[] = [];
  bins.forEach((b, i) => {
    if (b !== 0) {
      at.push(i);
      v.push(b);
    }
  });
  return { len: bins.length, at, v };
}

/** Dense bins from either form, or null when a sparse form points outside its length. */
export function denseBins(bins: number[] | SparseBins): number[] | null {
  if (Array.isArray(bins)) return bins;
  if (bins.at.length !== bins.v.length) return null;
  const out = new Array<number>(bins.len).fill(0);
  for (let i = 0; i < bins.at.length; i++) {
    const at = bins.at[i]!;
    if (at >= bins.len) return null;
    out[at] = bins.v[i]!;
  }
  return out;
}

/** Mergeable figures of one set of participants' values (the whole crowd, or one zone). */
export interface CrowdFigures {
  n: number;
  sum?: number;
  sumSq?: number;
  hist?: number[];
  histSum?: number[];
  votes?: number[];
  sumX?: number;
  sumY?: number;
}

/** One gateway process's fold of one aggregated control (crowd-summary.schema.json). */
export interface CrowdSummary extends CrowdFigures {
  v: 2;
  kind: 'summary';
  id: string;
  layoutId: string;
  lid: number;
  address: string;
  type: Exclude<ControlType, 'String'>;
  mode: AggregateMode;
  windowMs: number;
  /** the gateway process that folded it */
  source: string;
  seq: number;
  ts: number;
  /** the control's cue, as the layout declares it (the bridge decides by it) */
  cue?: CueSettings;
  /** the same figures per zone that holds someone */
  zones?: Record<string, CrowdFigures>;
}
