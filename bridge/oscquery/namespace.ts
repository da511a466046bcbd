// The OSCQuery namespace of a bridge (github.com/Vidvox/OSCQueryProposal): every address its
// targets receive, with TYPE, RANGE and DESCRIPTION. Each target's own Router is asked what it
// makes of sample actions, crowd values and cues of every control on the layout's pages, so the
// namespace is what the displays receive: the layout's own addresses, or the routes' (their
// addresses, scales and fixed arguments). Pure.
//   - RANGE per argument: MIN and MAX for a value that moves continuously (a Slider, an XYPad,
//     a crowd mean, scaled as a route says), VALS for one of a few (a Toggle, an Index's options,
//     a cue, a fixed argument), MIN alone for a count (participants, votes), null for free text.
//   - An address two sources share (two layouts, or targets whose routes differ) is described
//     once, by the first in the configuration's order; the others are named in `conflicts`.
import type { CrowdValue, ZoneValue } from '../../schemas/crowd-merge.js';
import type { Control, Page } from '../../schemas/types.js';
import { MODES_BY_TYPE } from '../../schemas/aggregate.js';
import { argValue, messageArgs, typeTags, type BooleanMode, type OscArg } from '../osc.js';
import { Router, type RouteConfig, type Unrouted } from '../routes.js';

/** One item of RANGE: the range of one argument. */
export interface RangeItem {
  MIN?: number;
  MAX?: number;
  VALS?: (number | string)[];
}

export interface Method {
  address: string;
  /** the OSC type tag string; '' for a message without arguments */
  type: string;
  range: (RangeItem | null)[];
  description: string;
  /** who plays it: `layoutId#n`, the layout's n-th target (from 0) */
  source: string;
}

/** What the namespace needs of a layout's definition (its record in Redis). */
export interface LayoutControls {
  name: string;
  pages: readonly Page[];
  zones: readonly string[];
}

/** What the namespace needs of a target: its routes and how it sends booleans. */
export interface NamespaceTarget {
  readonly booleans: BooleanMode;
  readonly routes?: readonly RouteConfig[];
  readonly unrouted: Unrouted;
}

export interface NamespaceLayout {
  layoutId: string;
  targets: readonly NamespaceTarget[];
  /** the layout's definition; null while it cannot be read */
  controls: LayoutControls | null;
}

/** How an argument moves with the input that changed it. */
type Kind = 'unit' | 'count' | 'discrete' | 'free';

/** One address's messages over the samples: its type tags, and each sample's arguments with the kind of input that varied. */
interface Seen {
  type: string;
  samples: { args: readonly OscArg[]; kind: Kind; what: string }[];
}


/** The RANGE item of argument `j` over the samples. */
function rangeOf(samples: Seen['samples'], j: number): RangeItem | null {
  const values = samples.map((s) => s.args[j]).filter((a): a is OscArg => a !== undefined).map(argValue);
  if (values.some((v) => typeof v === 'boolean')) return null; // T and F: no range to give
  const distinct = [...new Set(values)] as (number | string)[];
  if (distinct.length === 1) return { VALS: distinct };
  const kinds = new Set(samples.map((s) => s.kind));
  if (kinds.has('free') || distinct.some((v) => typeof v === 'string')) return null;
  const nums = distinct as number[];
  const [lo, hi] = [Math.min(...nums), Math.max(...nums)];
  if (kinds.has('count')) {
    const first = values[0] as number; // the sample at zero: a count grows from there
    return first === lo ? { MIN: lo } : { MAX: hi };
  }
  if (kinds.has('unit')) return { MIN: lo, MAX: hi };
  return { VALS: nums.sort((a, b) => a - b) };
}

/** Records what a router made of one sample. */
function see(into: Map<string, Seen>, messages: readonly { address: string; args: readonly OscArg[] }[], kind: Kind, what: string): void {
  for (const m of messages) {
    const seen = into.get(m.address);
    if (seen) seen.samples.push({ args: m.args, kind, what });
    else into.set(m.address, { type: typeTags(m.args), samples: [{ args: m.args, kind, what }] });
  }
}

const optionList = (c: Control) => (c.options ?? []).map((o) => `${o.index} ${o.label}`).join(', ');

/** The sample values of a control's plain actions, and how they move. */
function actionSamples(c: Control): { values: unknown[]; kind: Kind } {
  switch (c.type) {
    case 'Button':
      return { values: [null], kind: 'discrete' };
    case 'Toggle':
      return { values: [true, false], kind: 'discrete' }; // true first: TYPE "T" with booleans TF (T and F are used interchangeably)
    case 'Index':
      return { values: (c.options ?? []).map((o) => o.index), kind: 'discrete' };
    case 'Slider':
      return { values: [0, 1], kind: 'unit' };
    case 'XYPad':
      return { values: [[0, 0], [1, 1]], kind: 'unit' };
    case 'String':
      return { values: ['', 'text'], kind: 'free' };
  }
}

/** A control's plain actions on one target. */
function actionMethods(c: Control, router: Router, booleans: BooleanMode): Map<string, Seen> {
  const seen = new Map<string, Seen>();
  const { values, kind } = actionSamples(c);
  for (const value of values) {
    const messages = router.action({ address: c.address, type: c.type, value: value as never, lid: c.lid });
    const option = c.type === 'Index' ? c.options?.find((o) => o.index === value)?.label : undefined;
    see(seen, messages.map((m) => ({ address: m.address, args: messageArgs(m, booleans) })), kind, option ?? '');
  }
  return seen;
}

function actionDescription(c: Control, s: Seen): string {
  const options = [...new Set(s.samples.map((x) => x.what))];
  if (c.type !== 'Index') return c.props.label;
  if (options.length === 1) return `${c.props.label}: ${options[0]}`; // an option's own address
  return `${c.props.label} (${optionList(c)})`;
}

/** A crowd value of every figure at zero (zones included), and the same with one figure moved. */
function crowdSamples(c: Control, zones: readonly string[]): { base: CrowdValue; moved: { v: CrowdValue; kind: Kind; what: string }[] } {
  const mode = c.aggregate!.mode;
  const width = mode === 'votes' ? (c.options?.length ?? 0) : mode === 'centroid' ? 2 : 1;
  const hasSd = MODES_BY_TYPE.Slider.includes(mode); // a Slider's modes carry the spread
  const figures = (value: number, n: number, sd: number): ZoneValue => ({ n, value: Array<number>(width).fill(value), ...(hasSd && { sd }) });
  const make = (whole: ZoneValue, zone?: string, inZone?: ZoneValue): CrowdValue => ({
    lid: c.lid,
    address: c.address,
    mode,
    ...whole,
    zones: Object.fromEntries(zones.map((z) => [z, z === zone ? inZone! : figures(0, 0, 0)])),
  });
  const valueKind: Kind = mode === 'votes' || mode === 'rate' ? 'count' : 'unit';
  const moves = (z?: string) => {
    const put = (f: ZoneValue) => (z === undefined ? make(f) : make(figures(0, 0, 0), z, f));
    const where = z === undefined ? '' : ` in zone ${z}`;
    return [
      { v: put(figures(1, 0, 0)), kind: valueKind, what: `${crowdWhat(c)}${where}` },
      { v: put(figures(0, 1, 0)), kind: 'count' as const, what: `participants counted${where}` },
      ...(hasSd ? [{ v: put(figures(0, 0, 0.5)), kind: 'unit' as const, what: `standard deviation${where}` }] : []),
    ];
  };
  return { base: make(figures(0, 0, 0)), moved: [...moves(), ...zones.flatMap((z) => moves(z))] };
}

function crowdWhat(c: Control): string {
  switch (c.aggregate!.mode) {
    case 'votes':
      return `votes per option (${optionList(c)})`;
    case 'fraction':
      return 'fraction switched on';
    case 'rate':
      return 'presses per second';
    case 'centroid':
      return 'centroid (x, y)';
    default:
      return c.aggregate!.mode;
  }
}

/**
 * A control's crowd value on one target: every address of the base sample, each argument ranged
 * over the samples in which it moved (or VALS of its one value when nothing moves it).
 */
function crowdMethods(c: Control, zones: readonly string[], router: Router): Map<string, Seen> {
  const { base, moved } = crowdSamples(c, zones);
  const baseSeen = new Map<string, Seen>();
  see(baseSeen, router.crowd(base), 'discrete', '');
  const out = new Map<string, Seen>();
  for (const [address, s] of baseSeen) out.set(address, { type: s.type, samples: [...s.samples] });
  for (const m of moved) {
    for (const msg of router.crowd(m.v)) {
      const s = out.get(msg.address);
      const at = baseSeen.get(msg.address)?.samples[0]?.args;
      if (!s || !at || msg.args.every((a, j) => argValue(a) === argValue(at[j]!))) continue; // this figure does not move it
      s.samples.push({ args: msg.args, kind: m.kind, what: m.what });
    }
  }
  return out;
}

function crowdDescription(c: Control, s: Seen): string {
  const whats = [...new Set(s.samples.map((x) => x.what).filter((w) => w !== ''))];
  return `${c.props.label}: the crowd's ${whats.length > 0 ? whats.join(', ') : crowdWhat(c)}`;
}

/** A control's crowd cue on one target. */
function cueMethods(c: Control, router: Router): Map<string, Seen> {
  const seen = new Map<string, Seen>();
  const values = c.aggregate!.mode === 'votes' ? (c.options ?? []).map((o) => o.index) : [0, 1];
  for (const v of values) see(seen, router.cue(c.lid, c.address, v), 'discrete', '');
  return seen;
}

function cueDescription(c: Control): string {
  return c.aggregate!.mode === 'votes' ? `${c.props.label}: the crowd's decision, the winning option (${optionList(c)})` : `${c.props.label}: the crowd's cue, 1 on and 0 off`;
}

function method(address: string, s: Seen, description: string, source: string): Method {
  return { address, type: s.type, range: [...s.type].map((_, j) => rangeOf(s.samples, j)), description, source };
}

/** Every control of every page, once per lid (lids are unique in a layout). */
function controlsOf(pages: readonly Page[]): Control[] {
  const byLid = new Map<number, Control>();
  for (const p of pages) for (const c of p.controls) if (!byLid.has(c.lid)) byLid.set(c.lid, c);
  return [...byLid.values()].sort((a, b) => a.lid - b.lid);
}

/** The methods one target of a layout receives. */
export function targetMethods(controls: LayoutControls, target: NamespaceTarget, source: string): Method[] {
  const router = new Router(target.routes, target.unrouted); // its own: probing counts nothing the bridge reports
  const out: Method[] = [];
  for (const c of controlsOf(controls.pages)) {
    if (!c.aggregate) {
      for (const [a, s] of actionMethods(c, router, target.booleans)) out.push(method(a, s, actionDescription(c, s), source));
      continue;
    }
    for (const [a, s] of crowdMethods(c, controls.zones, router)) out.push(method(a, s, crowdDescription(c, s), source));
    if (c.aggregate.cue) for (const [a, s] of cueMethods(c, router)) out.push(method(a, s, cueDescription(c), source));
  }
  return out;
}

export interface Methods {
  /** by address, the first source's */
  methods: Map<string, Method>;
  /** addresses described differently by two sources, one sentence each */
  conflicts: string[];
}

/** The methods of every layout's targets, an address described by the first source that has it. */
export function bridgeMethods(layouts: readonly NamespaceLayout[]): Methods {
  const methods = new Map<string, Method>();
  const conflicts: string[] = [];
  for (const l of layouts) {
    if (!l.controls) continue;
    l.targets.forEach((t, i) => {
      for (const m of targetMethods(l.controls!, t, `${l.layoutId}#${i}`)) {
        const had = methods.get(m.address);
        if (!had) methods.set(m.address, m);
        else if (had.type !== m.type || had.description !== m.description || JSON.stringify(had.range) !== JSON.stringify(m.range)) {
          conflicts.push(`${m.address}: described by ${had.source} (${had.description}), also played by ${m.source} (${m.description})`);
        }
      }
    });
  }
  return { methods, conflicts };
}
