// The crowd figures computed offline from the actions themselves (every value kept, sorted where
// needed): what the gateway's fold and the bridge's merge must reproduce; and the layout the crowd
// tests import.
import type { AggregateMode } from '../../schemas/aggregate.js';
import type { ControlType, LayoutDefinition } from '../../schemas/types.js';

export const CROWD_WINDOW_MS = 60_000;
export const LAYOUT = 'crowd-show';
export const agg = (mode: AggregateMode) => ({ mode, windowMs: CROWD_WINDOW_MS });
export const CROWD_LAYOUT: LayoutDefinition = {
  layoutId: LAYOUT,
  name: 'Crowd show',
  activePageId: 'main',
  pages: [
    {
      pageId: 'main',
      name: 'Main',
      controls: [
        { lid: 1, address: '/001', type: 'Button', props: { label: 'Cheer' }, aggregate: agg('rate') },
        { lid: 2, address: '/002', type: 'Slider', props: { label: 'Brightness' }, aggregate: agg('mean') },
        { lid: 3, address: '/003', type: 'Toggle', props: { label: 'Strobe' }, aggregate: agg('fraction') },
        { lid: 4, address: '/004', type: 'Index', props: { label: 'Colour' }, options: [{ index: 0, label: 'Red' }, { index: 1, label: 'Green' }, { index: 2, label: 'Blue' }], aggregate: agg('votes') },
        { lid: 6, address: '/006', type: 'XYPad', props: { label: 'Spotlight' }, aggregate: agg('centroid') },
        { lid: 10, address: '/010', type: 'Slider', props: { label: 'Tempo' }, aggregate: agg('median') },
        { lid: 11, address: '/011', type: 'Slider', props: { label: 'Haze' }, aggregate: agg('trimmed-mean') },
        { lid: 12, address: '/012', type: 'Slider', props: { label: 'Plain' } },
        { lid: 13, address: '/013', type: 'Slider', props: { label: 'Fog' }, aggregate: agg('mean') },
      ],
    },
  ],
};

/** The aggregated controls of CROWD_LAYOUT the exactness tests drive, by lid (13 is kept for the load test). */
export const CROWD_MODES: Record<number, string> = { 1: 'rate', 2: 'mean', 3: 'fraction', 4: 'votes', 6: 'centroid', 10: 'median', 11: 'trimmed-mean' };

export interface CrowdAction {
  participant: number;
  lid: number;
  type: ControlType;
  /** null for a Button press */
  value: unknown;
}

/** A participant's actions on CROWD_MODES' controls, round by round (1 to 3 rounds; the last value is the latest). */
export function participantRounds(random: () => number, participant: number): CrowdAction[][] {
  const rounds: CrowdAction[][] = [];
  for (let round = 0; round < 1 + Math.floor(random() * 3); round++) {
    const picks: [number, ControlType, unknown][] = [
      [2, 'Slider', Math.round(random() * 1000) / 1000],
      [3, 'Toggle', random() < 0.4],
      [4, 'Index', Math.floor(random() * 3)],
      [6, 'XYPad', [random(), random()]],
      [10, 'Slider', random()],
      [11, 'Slider', random() ** 2],
    ];
    if (random() < 0.5) picks.push([1, 'Button', null]);
    rounds.push(picks.map(([lid, type, value]) => ({ participant, lid, type, value })));
  }
  return rounds;
}

export interface OfflineFigure {
  mode: string;
  n: number;
  value: number[];
  sd?: number;
}

const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
const sdOf = (xs: number[]) => {
  const m = mean(xs);
  return Math.sqrt(xs.reduce((s, x) => s + (x - m) ** 2, 0) / xs.length);
};

/** By address ("/002"): each aggregated control's figure, from actions in order (all within the window). */
export function offlineCrowd(actions: CrowdAction[], modes: Record<number, string>, windowMs: number, optionCounts: Record<number, number>): Record<string, OfflineFigure> {
  const out: Record<string, OfflineFigure> = {};
  for (const [lidText, mode] of Object.entries(modes)) {
    const lid = Number(lidText);
    const address = `/${String(lid).padStart(3, '0')}`;
    const mine = actions.filter((a) => a.lid === lid);
    if (mode === 'rate') {
      if (mine.length > 0) out[address] = { mode, n: new Set(mine.map((a) => a.participant)).size, value: [mine.length / (windowMs / 1000)] };
      continue;
    }
    const latest = new Map<number, unknown>();
    for (const a of mine) latest.set(a.participant, a.value);
    const values = [...latest.values()];
    const n = values.length;
    if (n === 0) continue;
    switch (mode) {
      case 'fraction':
        out[address] = { mode, n, value: [values.filter((v) => v === true).length / n] };
        break;
      case 'votes': {
        const votes = new Array<number>(optionCounts[lid]!).fill(0);
        for (const v of values) votes[v as number]!++;
        out[address] = { mode, n, value: votes };
        break;
      }
      case 'centroid':
        out[address] = { mode, n, value: [mean(values.map((v) => (v as number[])[0]!)), mean(values.map((v) => (v as number[])[1]!))] };
        break;
      default: {
        const xs = values as number[];
        const sorted = [...xs].sort((a, b) => a - b);
        let value: number;
        if (mode === 'mean') value = mean(xs);
        else if (mode === 'median') value = n % 2 === 1 ? sorted[(n - 1) / 2]! : (sorted[n / 2 - 1]! + sorted[n / 2]!) / 2;
        else {
          const k = Math.floor(n * 0.1);
          value = mean(sorted.slice(k, n - k));
        }
        out[address] = { mode, n, value: [value], sd: sdOf(xs) };
      }
    }
  }
  return out;
}

/** A live channel's crowd frame: the value (a number, or a list for votes and centroid), n, sd. */
export interface CrowdFrame {
  op: 'crowd';
  lid: number;
  mode: string;
  value: number | number[];
  n: number;
  sd?: number;
}

/**
 * Where the newest crowd frame of each control differs from the offline figure: within float32
 * (what the bridge sends), and within a 0.01 bin for median and trimmed mean. Empty when all agree.
 */
export function crowdFrameMismatches(frames: readonly CrowdFrame[], expected: Record<string, OfflineFigure>): string[] {
  const newest = new Map<number, CrowdFrame>();
  for (const f of frames) newest.set(f.lid, f);
  const out: string[] = [];
  for (const [address, e] of Object.entries(expected)) {
    const f = newest.get(Number(address.slice(1)));
    if (!f) {
      out.push(`${address} ${e.mode}: no crowd frame`);
      continue;
    }
    const value = Array.isArray(f.value) ? f.value : [f.value];
    const tolerance = e.mode === 'median' || e.mode === 'trimmed-mean' ? 0.01 : 1e-6 * Math.max(1, ...e.value.map(Math.abs));
    if (f.n !== e.n) out.push(`${address} ${e.mode}: n ${f.n}, offline ${e.n}`);
    if (value.length !== e.value.length || e.value.some((x, k) => Math.abs(value[k]! - x) > tolerance)) out.push(`${address} ${e.mode}: ${JSON.stringify(value)}, offline ${JSON.stringify(e.value)}`);
    if (e.sd !== undefined && Math.abs((f.sd ?? NaN) - e.sd) > 1e-6) out.push(`${address} sd ${f.sd}, offline ${e.sd}`);
  }
  return out;
}
