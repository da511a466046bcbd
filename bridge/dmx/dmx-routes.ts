// A DMX target's routes (schemas/bridge-config.schema.json, dmxRoute): which channel each control's
// actions, crowd value, zone value or cue sets, and to what. Pure: a route turns what came into the
// DMX value it asks for (its goal); the lane (dmx-lane.ts) moves its channels there.
//   - A Slider, an XYPad's axis, or a crowd number (0..1) is scaled linearly onto `range`.
//   - An Index action, or a vote's leading option, takes its option's value from `values`.
//   - A Toggle is `on` or `off`.
//   - A cue or a Button press steps to `value`; with `pulseMs` it goes back to `rest` after that.
// An 8-bit route is one channel (0..255); a 16-bit route is two, coarse then fine (0..65535).
import type { CrowdValue } from '../../schemas/crowd-merge.js';
import type { ActionEntry } from '../../schemas/types.js';

export type StalePolicy = 'hold' | 'fade' | 'release';

export interface DmxRouteConfig {
  readonly lid: number;
  readonly channel: number;
  readonly bits?: 8 | 16;
  readonly range?: readonly [number, number];
  readonly axis?: 0 | 1;
  readonly values?: Readonly<Record<string, number>>;
  readonly on?: number;
  readonly off?: number;
  readonly value?: number;
  readonly pulseMs?: number;
  readonly rest?: number;
  readonly slew?: number;
  readonly crowd?: boolean;
  readonly zone?: string;
  readonly cue?: boolean;
  readonly stale?: StalePolicy;
  readonly fallback?: number;
  readonly fadeMs?: number;
}

/** The route's kind: what feeds it. */
export type RouteKind = 'action' | 'crowd' | 'cue';

export const kindOf = (r: DmxRouteConfig): RouteKind => (r.cue === true ? 'cue' : r.crowd === true || r.zone !== undefined ? 'crowd' : 'action');
/** The highest value of the route's channels: 255 or 65535. */
export const topOf = (r: DmxRouteConfig): number => (r.bits === 16 ? 0xffff : 0xff);
/** The channels the route writes (1-based). */
export const channelsOf = (r: DmxRouteConfig): number[] => (r.bits === 16 ? [r.channel, r.channel + 1] : [r.channel]);

const describe = (r: DmxRouteConfig, i: number) => `route ${i + 1} (lid ${r.lid}, channel ${r.channel}${r.bits === 16 ? `-${r.channel + 1}` : ''})`;

/**
 * What is wrong with a DMX target's routes beyond their schema, one sentence each naming the route
 * (its place counted from 1, its lid and channels); two routes on one channel are named together.
 */
export function dmxRouteProblems(routes: readonly DmxRouteConfig[]): string[] {
  const problems: string[] = [];
  const owner = new Map<number, number>();
  routes.forEach((r, i) => {
    const say = (what: string) => problems.push(`${describe(r, i)}: ${what}`);
    const top = topOf(r);
    const kinds = [r.crowd === true && 'crowd', r.zone !== undefined && 'zone', r.cue === true && 'cue'].filter(Boolean);
    if (kinds.length > 1) say(`choose one of crowd, zone and cue, not ${kinds.join(' and ')}`);
    if (r.bits === 16 && r.channel === 512) say('a 16-bit route needs two channels: 512 is the last');
    for (const [name, v] of [['on', r.on], ['off', r.off], ['value', r.value], ['rest', r.rest], ['fallback', r.fallback], ...(r.range ?? []).map((v) => ['range', v] as const), ...Object.values(r.values ?? {}).map((v) => ['values', v] as const)] as const) {
      if (v !== undefined && v > top) say(`${name} ${v} is past ${top}, the top of ${r.bits === 16 ? 'a 16-bit' : 'an 8-bit'} route`);
    }
    if (kindOf(r) !== 'crowd' && (r.stale !== undefined && r.stale !== 'hold')) say('stale policies apply to crowd and zone routes');
    if (kindOf(r) === 'cue' && (r.range !== undefined || r.values !== undefined)) say('a cue steps to value (or pulses it); range and values do not apply');
    for (const ch of channelsOf(r)) {
      const other = owner.get(ch);
      if (other !== undefined) problems.push(`${describe(r, i)} overlaps ${describe(routes[other]!, other)} on channel ${ch}`);
      else owner.set(ch, i);
    }
  });
  return problems;
}

/** A number 0..1 on the route's range, as a whole DMX value. */
function scaled(r: DmxRouteConfig, v: number): number {
  const [lo, hi] = r.range ?? [0, topOf(r)];
  const x = lo + Math.min(1, Math.max(0, v)) * (hi - lo);
  return Math.round(x);
}

/** What an action asks of a route: a goal, a pulse (value, then rest after ms), or nothing. */
export type Ask = { goal: number } | { pulse: number; ms: number } | null;

/** What a plain action of the route's control asks of it. */
export function actionAsk(r: DmxRouteConfig, e: Pick<ActionEntry, 'type' | 'value'>): Ask {
  switch (e.type) {
    case 'Slider':
      return typeof e.value === 'number' ? { goal: scaled(r, e.value) } : null;
    case 'XYPad':
      return Array.isArray(e.value) && typeof e.value[r.axis ?? 0] === 'number' ? { goal: scaled(r, e.value[r.axis ?? 0]) } : null;
    case 'Toggle':
      return { goal: e.value === true ? (r.on ?? topOf(r)) : (r.off ?? 0) };
    case 'Index': {
      const v = r.values?.[String(e.value)];
      return v === undefined ? null : { goal: v };
    }
    case 'Button':
      return press(r);
    default:
      return null; // a String has no DMX value
  }
}

/** A cue fired, or a Button pressed: a step, or a pulse. */
export function press(r: DmxRouteConfig): Ask {
  const value = r.value ?? topOf(r);
  return r.pulseMs === undefined ? { goal: value } : { pulse: value, ms: r.pulseMs };
}

/** The goal a crowd value (or its zone's) sets on a crowd route; null: nothing counted there yet. */
export function crowdGoal(r: DmxRouteConfig, v: CrowdValue): number | null {
  const figures = r.zone === undefined ? v : v.zones?.[r.zone];
  if (!figures || figures.n === 0) return null;
  if (v.mode === 'votes') {
    const counts = figures.value;
    let leading = -1;
    for (let i = 0; i < counts.length; i++) if (counts[i]! > 0 && (leading === -1 || counts[i]! > counts[leading]!)) leading = i;
    return leading === -1 ? null : (r.values?.[String(leading)] ?? null);
  }
  const x = figures.value[r.axis ?? 0];
  return typeof x === 'number' ? scaled(r, x) : null;
}
