// The crowd's value of one aggregated control: the newest summary of each gateway process (source)
// merged. A summary counts until ts + windowMs (by then everything in it has left its window) or
// its lease runs out, ts + CROWD_LEASE_MS, whichever comes first: a process holding participants
// refreshes every second, so a dead one drops out within about 3 s; one that stops gracefully sends
// an empty summary, which counts nobody. The bridge sends these values to the displays, the
// gateway's live channel to the phones: one merge, so both see the same figure.
// A participant counted by two gateway processes in one window is counted twice.
import { HIST_BINS, TRIM_SHARE, summaryExpiresAt, type AggregateMode, type CrowdFigures, type CrowdSummary } from './aggregate.js';
import type { CueSettings } from './crowd-cue.js';

/** The merged figures of one control. */
export interface CrowdValue {
  lid: number;
  address: string;
  mode: AggregateMode;
  /** participants counted (over every source) */
  n: number;
  /** the crowd value: one number, [x, y] for centroid, counts per option for votes */
  value: number[];
  /** Slider modes: the standard deviation of the values */
  sd?: number;
  /** the same figures per zone that counts someone */
  zones?: Record<string, ZoneValue>;
  /** the control's cue, as its newest summary carries it */
  cue?: CueSettings;
}

/** One zone's merged figures. */
export interface ZoneValue {
  n: number;
  value: number[];
  sd?: number;
}

/** The value at rank `k` (0-based) of a 0.01 histogram, as its bin's centre. */
function rankValue(hist: readonly number[], k: number): number {
  let seen = 0;
  for (let b = 0; b < hist.length; b++) {
    seen += hist[b]!;
    if (seen > k) return b / (HIST_BINS - 1);
  }
  return 1;
}

/** The sum of the `k` lowest values (by bins, a partly taken bin at its mean) of a histogram with per-bin sums. */
function lowestSum(hist: readonly number[], histSum: readonly number[], k: number, order: 1 | -1): number {
  let left = k;
  let sum = 0;
  for (let j = 0; j < hist.length && left > 0; j++) {
    const b = order === 1 ? j : hist.length - 1 - j;
    const count = hist[b]!;
    if (count === 0) continue;
    const take = Math.min(count, left);
    sum += take === count ? histSum[b]! : (histSum[b]! / count) * take;
    left -= take;
  }
  return sum;
}

/**
 * Merges the summaries of one control (all the same mode) into its crowd value: the whole crowd,
 * and each zone that counts someone (a source without the zone counts nobody in it).
 */
export function mergeSummaries(summaries: readonly CrowdSummary[]): CrowdValue {
  const whole = mergeFigures(summaries);
  const newest = summaries.reduce((a, b) => (b.ts > a.ts ? b : a));
  const names = new Set<string>();
  for (const s of summaries) if (s.zones) for (const z of Object.keys(s.zones)) names.add(z);
  const zones: Record<string, ZoneValue> = {};
  for (const z of [...names].sort()) {
    const v = mergeFigures(summaries.map((s) => zoneSummary(s, s.zones?.[z] ?? { n: 0 })));
    if (v.n > 0) zones[z] = { n: v.n, value: v.value, ...(v.sd !== undefined && { sd: v.sd }) };
  }
  return { ...whole, ...(Object.keys(zones).length > 0 && { zones }), ...(newest.cue && { cue: newest.cue }) };
}

/** A summary's head with one zone's figures in place of the whole crowd's. */
function zoneSummary(s: CrowdSummary, f: CrowdFigures): CrowdSummary {
  const { v, kind, id, layoutId, lid, address, type, mode, windowMs, source, seq, ts } = s;
  return { v, kind, id, layoutId, lid, address, type, mode, windowMs, source, seq, ts, ...f };
}

/** Merges the figures of summaries (the whole crowd's) into one value. */
function mergeFigures(summaries: readonly CrowdSummary[]): CrowdValue {
  const first = summaries[0]!;
  const n = summaries.reduce((s, x) => s + x.n, 0);
  const total = (k: 'sum' | 'sumSq' | 'sumX' | 'sumY') => summaries.reduce((s, x) => s + (x[k] ?? 0), 0);
  const bins = (k: 'hist' | 'histSum' | 'votes', length: number) => {
    const out = new Array<number>(length).fill(0);
    for (const x of summaries) x[k]?.forEach((c, b) => (out[b]! += c));
    return out;
  };
  const base = { lid: first.lid, address: first.address, mode: first.mode, n };
  switch (first.mode) {
    case 'rate':
      return { ...base, value: [total('sum') / (first.windowMs / 1000)] };
    case 'fraction':
      return { ...base, value: [n === 0 ? 0 : total('sum') / n] };
    case 'votes':
      return { ...base, value: bins('votes', Math.max(...summaries.map((x) => x.votes?.length ?? 0))) };
    case 'centroid':
      return { ...base, value: n === 0 ? [0, 0] : [total('sumX') / n, total('sumY') / n] };
    default: {
      const mean = n === 0 ? 0 : total('sum') / n;
      const sd = n === 0 ? 0 : Math.sqrt(Math.max(0, total('sumSq') / n - mean * mean));
      if (first.mode === 'mean' || n === 0) return { ...base, value: [mean], sd };
      const hist = bins('hist', HIST_BINS);
      if (first.mode === 'median') {
        const median = n % 2 === 1 ? rankValue(hist, (n - 1) / 2) : (rankValue(hist, n / 2 - 1) + rankValue(hist, n / 2)) / 2;
        return { ...base, value: [median], sd };
      }
      const histSum = bins('histSum', HIST_BINS);
      const k = Math.floor(n * TRIM_SHARE);
      const kept = total('sum') - lowestSum(hist, histSum, k, 1) - lowestSum(hist, histSum, k, -1);
      return { ...base, value: [kept / (n - 2 * k)], sd };
    }
  }
}

/** A crowd value as the wire carries it (float32 values), for telling a new value from a repeat. */
function valueKey(v: CrowdValue): string {
  const f32 = (x: number) => Math.fround(x);
  const one = (x: { n: number; value: number[]; sd?: number }) => `${x.n} ${x.value.map(f32).join(',')} ${x.sd === undefined ? '' : f32(x.sd)}`;
  const zones = v.zones ? Object.entries(v.zones).map(([z, x]) => `${z}:${one(x)}`).join(';') : '';
  return `${v.address} ${v.mode} ${one(v)} ${zones}`;
}

/** The crowd controls of one layout: the newest summary per source, merged on demand. */
export class CrowdTable {
  /** by lid: by source, the newest summary */
  private readonly controls = new Map<number, Map<string, CrowdSummary>>();
  /** what `changed()` last returned for each lid, as valueKey says it, and the value itself */
  private readonly lastSent = new Map<number, string>();
  private readonly lastValue = new Map<number, CrowdValue>();
  /** lids whose merged value may have changed since `changed()` last asked */
  private readonly touched = new Set<number>();

  /** Takes a summary; an older one of the same source and control (by seq) changes nothing. */
  offer(s: CrowdSummary): void {
    let bySource = this.controls.get(s.lid);
    if (!bySource) this.controls.set(s.lid, (bySource = new Map<string, CrowdSummary>()));
    const held = bySource.get(s.source);
    if (held && held.seq >= s.seq) return;
    bySource.set(s.source, s);
    this.touched.add(s.lid);
  }

  /** What `changed()` last returned for each control: the crowd's values now. */
  current(): CrowdValue[] {
    return [...this.lastValue.values()];
  }

  /** How many controls hold a summary. */
  get size(): number {
    return this.controls.size;
  }

  /** The merged value of every control whose summaries changed or ran out since the last call. */
  changed(now: number): CrowdValue[] {
    for (const [lid, bySource] of this.controls) {
      for (const [source, s] of bySource) {
        if (summaryExpiresAt(s) <= now) {
          bySource.delete(source);
          this.touched.add(lid);
        }
      }
    }
    const out: CrowdValue[] = [];
    for (const lid of this.touched) {
      const bySource = this.controls.get(lid);
      if (!bySource) continue;
      const live = [...bySource.values()];
      if (live.length === 0) {
        this.controls.delete(lid);
        continue; // the last summary ran out: what was sent stays until a new one (its n said who was counted)
      }
      // A mode changed by a re-import: only the newest mode's summaries count.
      const newest = live.reduce((a, b) => (b.ts > a.ts ? b : a));
      const merged = mergeSummaries(live.filter((x) => x.mode === newest.mode && x.address === newest.address));
      // a lease refresh changes nothing: the displays get a value only when it differs from the last one
      const key = valueKey(merged);
      if (this.lastSent.get(lid) === key) continue;
      this.lastSent.set(lid, key);
      this.lastValue.set(lid, merged);
      out.push(merged);
    }
    this.touched.clear();
    return out;
  }
}
