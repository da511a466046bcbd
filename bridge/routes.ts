// A target's routes: the addresses and values its own software expects, made from the layout's
// actions, crowd values and cues (schemas/bridge-config.schema.json, target.routes). Pure: the
// scheduler asks each target's Router what to send.
//   - A route for a control (`lid`) sends its plain actions to `address`; `range` scales a Slider or
//     XYPad value (0..1) linearly onto [min, max], `int` rounds it and sends an OSC int; `options`
//     sends an Index action to its chosen option's address; `args` replaces the value with fixed,
//     typed arguments.
//   - `crowd: true` routes the control's crowd value instead, `zone` one zone's value, `cue: true`
//     its crowd cue (the cue's value as an int unless `args` are given).
//   - A control with no route of a kind goes to the layout's own address (`unrouted: "send"`, the
//     default) or nowhere (`"drop"`).
import type { ActionEntry } from '../schemas/types.js';
import type { CrowdValue } from '../schemas/crowd-merge.js';
import { cueMessage, crowdMessages, type CrowdMessage } from './crowd.js';
import type { OscArg, OscEntry, OscMessage, TimedGroup } from './osc.js';
import type { Owed } from './crowd-outbox.js';

/** A fixed argument as the configuration writes it: a string, a whole number (int), another number (float), a boolean, or one typed explicitly. */
export type ArgConfig = string | number | boolean | { i: number } | { f: number } | { s: string };

export interface RouteConfig {
  readonly lid: number;
  readonly address?: string;
  readonly range?: readonly [number, number];
  readonly int?: boolean;
  readonly options?: Readonly<Record<string, string>>;
  readonly args?: readonly ArgConfig[];
  readonly crowd?: boolean;
  readonly zone?: string;
  readonly cue?: boolean;
}

export type Unrouted = 'send' | 'drop';

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

/** The typed OSC argument of a configured one. */
export function oscArg(a: ArgConfig): OscArg {
  if (typeof a === 'string') return { type: 'string', value: a };
  if (typeof a === 'boolean') return { type: a ? 'true' : 'false' };
  if (typeof a === 'number') return Number.isInteger(a) ? { type: 'integer', value: a } : { type: 'float', value: a };
  if ('i' in a) return { type: 'integer', value: a.i };
  if ('f' in a) return { type: 'float', value: a.f };
  return { type: 'string', value: a.s };
}

/**
 * What is wrong with a target's routes beyond their schema, one sentence each naming the route
 * (its place in the list, counted from 1, and its lid); empty when nothing is.
 */
export function routeProblems(routes: readonly RouteConfig[]): string[] {
  const problems: string[] = [];
  routes.forEach((r, i) => {
    const say = (what: string) => problems.push(`route ${i + 1} (lid ${r.lid}): ${what}`);
    const kinds = [r.crowd === true && 'crowd', r.zone !== undefined && 'zone', r.cue === true && 'cue'].filter(Boolean);
    if (kinds.length > 1) say(`choose one of crowd, zone and cue, not ${kinds.join(' and ')}`);
    if ((r.address === undefined) === (r.options === undefined)) say('give either address or options');
    if (r.options !== undefined && kinds.length > 0) say('options route an Index action, not a crowd value or cue');
    if (r.range !== undefined && r.range[0] === r.range[1]) say(`range [${r.range[0]}, ${r.range[1]}] maps every value to one number`);
    if (r.args !== undefined && (r.range !== undefined || r.int === true)) say('args replace the value, so range and int have nothing to act on');
    if (r.cue === true && (r.range !== undefined || r.int === true)) say('a cue sends its value as an int; range and int do not apply');
    if (r.int === true && r.range !== undefined && Math.max(Math.abs(r.range[0]), Math.abs(r.range[1])) > INT32_MAX) say('an OSC int is 32-bit: the range does not fit');
    for (const a of r.args ?? []) {
      const v = typeof a === 'object' ? ('i' in a ? a.i : undefined) : typeof a === 'number' && Number.isInteger(a) ? a : undefined;
      if (v !== undefined && (v < INT32_MIN || v > INT32_MAX)) say(`the int argument ${v} does not fit 32 bits`);
    }
  });
  return problems;
}

/** A Slider or crowd number (0..1) on the route's scale, as its OSC argument. */
function scaled(r: RouteConfig, v: number): OscArg {
  const x = r.range ? r.range[0] + v * (r.range[1] - r.range[0]) : v;
  if (!r.int) return { type: 'float', value: x };
  return { type: 'integer', value: Math.min(INT32_MAX, Math.max(INT32_MIN, Math.round(x))) };
}

/** The one target's view of a layout: which messages each action, crowd value and cue becomes. */
export class Router {
  private readonly plain = new Map<number, RouteConfig[]>();
  private readonly crowdRoutes = new Map<number, RouteConfig[]>();
  private readonly cueRoutes = new Map<number, RouteConfig[]>();
  private readonly fixedArgs = new Map<RouteConfig, OscArg[]>();
  /** messages this target was not sent because nothing routes them and `unrouted` is drop */
  dropped = 0;

  constructor(
    routes: readonly RouteConfig[] = [],
    private readonly unrouted: Unrouted = 'send',
  ) {
    for (const r of routes) {
      const into = r.cue === true ? this.cueRoutes : r.crowd === true || r.zone !== undefined ? this.crowdRoutes : this.plain;
      into.set(r.lid, [...(into.get(r.lid) ?? []), r]);
      if (r.args) this.fixedArgs.set(r, r.args.map(oscArg));
    }
  }

  /** True when every action goes out as the layout has it (no route, nothing dropped): the scheduler then skips the router. */
  get identity(): boolean {
    return this.plain.size === 0 && this.crowdRoutes.size === 0 && this.cueRoutes.size === 0 && this.unrouted === 'send';
  }

  /** The messages of one plain action for this target. */
  action(e: OscEntry & Pick<ActionEntry, 'lid'>): OscMessage[] {
    const routes = this.plain.get(e.lid);
    if (!routes) {
      if (this.unrouted === 'send') return [e];
      this.dropped++;
      return [];
    }
    const out: OscMessage[] = [];
    for (const r of routes) {
      const args = this.fixedArgs.get(r);
      if (r.options) {
        const address = r.options[String(e.value)];
        if (address !== undefined) out.push({ address, type: 'Args', value: args ?? [] });
      } else if (args) {
        out.push({ address: r.address!, type: 'Args', value: args });
      } else if ((r.range || r.int) && e.type === 'Slider') {
        out.push({ address: r.address!, type: 'Args', value: [scaled(r, e.value as number)] });
      } else if ((r.range || r.int) && e.type === 'XYPad') {
        out.push({ address: r.address!, type: 'Args', value: (e.value as number[]).map((v) => scaled(r, v)) });
      } else {
        out.push({ ...e, address: r.address! });
      }
    }
    return out;
  }

  /** Timed groups of actions as this target's messages; a group left empty is left out. */
  groups(groups: TimedGroup<OscEntry & Pick<ActionEntry, 'lid'>>[]): TimedGroup[] {
    if (this.identity) return groups;
    return groups.map((g) => ({ timetag: g.timetag, entries: g.entries.flatMap((e) => this.action(e)) })).filter((g) => g.entries.length > 0);
  }

  /** What the crowd owes this target (values changed, cues fired) as its messages, one list per value or cue. */
  owed(owed: Owed): CrowdMessage[][] {
    return [...owed.values.map((v) => this.crowd(v)), ...owed.cues.map((c) => this.cue(c.lid, c.address, c.value))].filter((m) => m.length > 0);
  }

  /** The messages of a crowd value for this target. */
  crowd(v: CrowdValue): CrowdMessage[] {
    const routes = this.crowdRoutes.get(v.lid);
    if (!routes) {
      if (this.unrouted === 'send') return crowdMessages(v);
      this.dropped++;
      return [];
    }
    const out: CrowdMessage[] = [];
    for (const r of routes) {
      const figures = r.zone === undefined ? v : v.zones?.[r.zone];
      if (!figures) continue; // that zone counts no one yet
      const args = this.fixedArgs.get(r);
      const value: OscArg[] = args ?? (v.mode === 'votes' && !r.range ? figures.value.map((n) => ({ type: 'integer' as const, value: Math.min(n, INT32_MAX) })) : figures.value.map((n) => scaled(r, n)));
      out.push({ address: r.address!, args: value });
    }
    return out;
  }

  /** The messages of a crowd cue (`value`: the winning option, or 1 and 0) for this target. */
  cue(lid: number, address: string, value: number): CrowdMessage[] {
    const routes = this.cueRoutes.get(lid);
    if (!routes) {
      if (this.unrouted === 'send') return [cueMessage(address, value)];
      this.dropped++;
      return [];
    }
    return routes.map((r) => ({ address: r.address!, args: this.fixedArgs.get(r) ?? [{ type: 'integer', value }] }));
  }
}
