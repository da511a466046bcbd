// A target's routes (bridge/routes.ts), decoded by osc-min from the bridge's own bytes: scaled and
// rounded values, an Index to its option's address, fixed typed arguments, crowd values, zone
// values and cues on their own addresses, and what a control with no route does (send or drop).
// The config check names the layout, the target and the route. Seeded random routes and values
// never crash the encoder and keep every routed value in its range.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromBuffer, type OscPacketOutput } from 'osc-min';
import { describe, expect, it } from 'vitest';
import { loadBridgeConfig, BridgeConfigError } from '../../bridge/config.js';
import { IMMEDIATE, packDatagrams, type OscMessage } from '../../bridge/osc.js';
import { Router, oscArg, routeProblems, type RouteConfig } from '../../bridge/routes.js';
import type { CrowdValue } from '../../schemas/crowd-merge.js';
import type { ActionEntry } from '../../schemas/types.js';
import { fuzzSeed, seededRandom } from '../helpers/seeded-random.js';

type Decoded = { address: string; args: { type: string; value?: unknown }[] };
/** The messages as a display decodes them (one datagram, osc-min). */
function onWire(messages: OscMessage[]): Decoded[] {
  if (messages.length === 0) return [];
  const { datagrams } = packDatagrams([{ timetag: IMMEDIATE, entries: messages }], 'int', 65_000);
  expect(datagrams).toHaveLength(1);
  const bundle = fromBuffer(datagrams[0]!) as Extract<OscPacketOutput, { oscType: 'bundle' }>;
  return bundle.elements.map((m) => {
    const msg = m as Extract<OscPacketOutput, { oscType: 'message' }>;
    return { address: msg.address, args: msg.args.map((a) => ({ type: a.type, value: (a as { value?: unknown }).value })) };
  });
}
const action = (lid: number, type: ActionEntry['type'], value: ActionEntry['value']) => ({ lid, address: `/${String(lid).padStart(3, '0')}`, type, value });

describe('routes: plain actions', () => {
  it('scales a Slider onto a range as a float, or rounds it to an int', () => {
    const r = new Router([{ lid: 2, address: '/composition/layers/1/video/opacity', range: [0, 1] }, { lid: 2, address: '/dimmer', range: [0, 255], int: true }]);
    const [opacity, dimmer] = onWire(r.action(action(2, 'Slider', 0.75)));
    expect(opacity).toEqual({ address: '/composition/layers/1/video/opacity', args: [{ type: 'float', value: 0.75 }] });
    expect(dimmer).toEqual({ address: '/dimmer', args: [{ type: 'integer', value: 191 }] });
  });

  it('scales both axes of an XYPad, including a reversed range', () => {
    const r = new Router([{ lid: 6, address: '/pan-tilt', range: [100, -100] }]);
    const [m] = onWire(r.action(action(6, 'XYPad', [0.25, 1])));
    expect(m!.args.map((a) => a.value)).toEqual([50, -100]);
  });

  it('sends an Index action to its option\'s address, with args or none; an option without an address sends nothing', () => {
    const r = new Router([{ lid: 4, options: { 0: '/cue/red/go', 1: '/cue/blue/go' } }, { lid: 4, options: { 1: '/gma3/cmd' }, args: ['Go+ Executor 201'] }]);
    expect(onWire(r.action(action(4, 'Index', 0)))).toEqual([{ address: '/cue/red/go', args: [] }]);
    expect(onWire(r.action(action(4, 'Index', 1)))).toEqual([{ address: '/cue/blue/go', args: [] }, { address: '/gma3/cmd', args: [{ type: 'string', value: 'Go+ Executor 201' }] }]);
    expect(r.action(action(4, 'Index', 2))).toEqual([]);
  });

  it('replaces the value with fixed arguments, each with its OSC type', () => {
    const r = new Router([{ lid: 1, address: '/cue/12/go', args: [] }, { lid: 1, address: '/mix', args: ['x', 3, 0.5, true, false, { i: 7 }, { f: 2 }, { s: '9' }] }]);
    const [go, mix] = onWire(r.action(action(1, 'Button', null)));
    expect(go).toEqual({ address: '/cue/12/go', args: [] });
    expect(mix!.args).toEqual([
      { type: 'string', value: 'x' }, { type: 'integer', value: 3 }, { type: 'float', value: 0.5 }, { type: 'true', value: true }, { type: 'false', value: false },
      { type: 'integer', value: 7 }, { type: 'float', value: 2 }, { type: 'string', value: '9' },
    ]);
  });

  it('moves a control without range or args to the route\'s address with its own value; a control with no route goes to its own address, or nowhere with unrouted drop (counted)', () => {
    const send = new Router([{ lid: 5, address: '/wall/text' }]);
    expect(onWire(send.action(action(5, 'String', 'hello')))).toEqual([{ address: '/wall/text', args: [{ type: 'string', value: 'hello' }] }]);
    expect(onWire(send.action(action(3, 'Toggle', true)))).toEqual([{ address: '/003', args: [{ type: 'integer', value: 1 }] }]);
    const drop = new Router([{ lid: 5, address: '/wall/text' }], 'drop');
    expect(drop.action(action(3, 'Toggle', true))).toEqual([]);
    expect(drop.dropped).toBe(1);
    expect(new Router().identity).toBe(true);
    expect(drop.identity).toBe(false);
  });
});

describe('routes: crowd values and cues', () => {
  const slider: CrowdValue = { lid: 10, address: '/010', mode: 'mean', n: 40, value: [0.5], sd: 0.1, zones: { left: { n: 10, value: [0.2] } } };
  const votes: CrowdValue = { lid: 11, address: '/011', mode: 'votes', n: 9, value: [2, 3, 4] };

  it('routes a crowd value, a zone\'s value and a cue to their own addresses', () => {
    const r = new Router([
      { lid: 10, crowd: true, address: '/composition/master', range: [0, 255], int: true },
      { lid: 10, zone: 'left', address: '/left/level' },
      { lid: 10, zone: 'balcony', address: '/balcony/level' },
      { lid: 11, cue: true, address: '/gma3/cmd', args: ['Go+ Executor 201'] },
      { lid: 12, cue: true, address: '/strobe' },
    ]);
    expect(r.crowd(slider)).toEqual([
      { address: '/composition/master', args: [{ type: 'integer', value: 128 }] },
      { address: '/left/level', args: [{ type: 'float', value: 0.2 }] },
    ]);
    expect(r.crowd(votes).map((m) => m.address)).toEqual(['/011', '/011/n']); // no route: as the layout has it
    expect(r.cue(11, '/011', 2)).toEqual([{ address: '/gma3/cmd', args: [{ type: 'string', value: 'Go+ Executor 201' }] }]);
    expect(r.cue(12, '/012', 1)).toEqual([{ address: '/strobe', args: [{ type: 'integer', value: 1 }] }]);
    expect(r.cue(13, '/013', 1)).toEqual([{ address: '/013/cue', args: [{ type: 'integer', value: 1 }] }]);
    const drop = new Router([{ lid: 10, crowd: true, address: '/m' }], 'drop');
    expect(drop.crowd(votes)).toEqual([]);
    expect(drop.cue(11, '/011', 1)).toEqual([]);
    expect(drop.dropped).toBe(2);
  });

  it('sends a vote\'s counts as ints', () => {
    expect(new Router([{ lid: 11, crowd: true, address: '/votes' }]).crowd(votes)).toEqual([{ address: '/votes', args: [2, 3, 4].map((value) => ({ type: 'integer', value })) }]);
  });
});

describe('routes: the configuration', () => {
  const load = (routes: unknown[], extra: object = {}) => {
    const file = { layouts: [{ layoutId: 'show', targets: [{ host: '10.0.0.30', port: 53000, routes, ...extra }] }] };
    return () => loadBridgeConfig({ config: writeTemp(file) }, {});
  };

  it('names the layout, the target and the route of a mistake', () => {
    expect(load([{ lid: 2, address: '/a', range: [1, 1] }])).toThrow('layout show, target 10.0.0.30:53000, route 1 (lid 2): range [1, 1] maps every value to one number');
    expect(load([{ lid: 2, address: '/a' }, { lid: 4, address: '/b', options: { 0: '/c' } }])).toThrow('route 2 (lid 4): give either address or options');
    expect(load([{ lid: 7, cue: true, crowd: true, address: '/a' }])).toThrow('choose one of crowd, zone and cue, not crowd and cue');
    expect(load([{ lid: 7, address: '/a', args: ['x'], range: [0, 1] }])).toThrow('args replace the value');
    expect(load([{ lid: 7, address: 'no-slash' }])).toThrow(/^layout show, target 10\.0\.0\.30:53000: layouts\[0\]\.targets\[0\]\.routes\[0\]\.address/);
    expect(load([{ lid: 7, address: '/a b' }])).toThrow(BridgeConfigError);
    expect(load([{ lid: 7, address: '/a', args: [{ i: 2 ** 31 }] }])).toThrow(BridgeConfigError);
    expect(load([{ lid: 7, address: '/a' }], { unrouted: 'maybe' })).toThrow(/unrouted must be one of: send, drop/);
    expect(load([{ lid: 2, address: '/composition/layers/1/video/opacity', range: [0, 1] }, { lid: 4, options: { 0: '/cue/red/go', 1: '/cue/blue/go' } }, { lid: 1, address: '/cue/12/go', args: [] }], { unrouted: 'drop' })).not.toThrow();
  });

  it("accepts every worked example of docs/venue.md's routes as a target", () => {
    const doc = readFileSync('docs/venue.md', 'utf8');
    const section = doc.slice(doc.indexOf('### Routes'), doc.indexOf('\n### ', doc.indexOf('### Routes') + 1));
    const examples = [...section.matchAll(/```json\n(\{ "host"[\s\S]*?)```/g)].map((m) => JSON.parse(m[1]!) as object);
    expect(examples).toHaveLength(4);
    for (const target of examples) expect(() => loadBridgeConfig({ config: writeTemp({ layouts: [{ layoutId: 'show', targets: [target] }] }) }, {})).not.toThrow();
  });

  it('routeProblems lists every problem, one sentence each', () => {
    expect(routeProblems([{ lid: 1, address: '/a', cue: true, int: true }, { lid: 2 }])).toEqual([
      'route 1 (lid 1): a cue sends its value as an int; range and int do not apply',
      'route 2 (lid 2): give either address or options',
    ]);
  });
});

describe('routes: seeded random routes and values', () => {
  it('never throw, encode as osc-min decodes them, and keep every scaled value in its range', () => {
    const seed = fuzzSeed();
    const rand = seededRandom(seed);
    const pick = <T,>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)]!;
    try {
      for (let round = 0; round < 300; round++) {
        const lo = (rand() - 0.5) * 2e6;
        const hi = lo + (rand() < 0.5 ? -1 : 1) * (1 + rand() * 1e6);
        const int = rand() < 0.5;
        const route: RouteConfig = { lid: 2, address: `/r/${round}`, range: [lo, hi], int };
        const r = new Router([route, { lid: 4, options: { 0: '/o/0', 1: '/o/1' }, args: [pick(['s', 1, 0.5, true, { f: 1 }])] }], pick(['send', 'drop'] as const));
        const value = pick([0, 1, rand(), rand(), 1 - Number.EPSILON]);
        const messages = [...r.action(action(2, 'Slider', value)), ...r.action(action(6, 'XYPad', [rand(), rand()])), ...r.action(action(4, 'Index', Math.floor(rand() * 3)))];
        const wire = onWire(messages);
        const scaledArg = wire.find((m) => m.address === `/r/${round}`)!.args[0]!;
        expect(scaledArg.type).toBe(int ? 'integer' : 'float');
        const [min, max] = [Math.min(lo, hi), Math.max(lo, hi)];
        expect(scaledArg.value as number).toBeGreaterThanOrEqual(Math.floor(min) - 1); // float32 rounding on the wire
        expect(scaledArg.value as number).toBeLessThanOrEqual(Math.ceil(max) + 1);
        expect(oscArg(pick(['a', 2, 2.5, false, { s: 'b' }])).type).toMatch(/^(string|integer|float|false)$/);
      }
    } catch (e) {
      throw new Error(`routes fuzz failed with FUZZ_SEED=${seed}: ${(e as Error).message}`);
    }
  });
});

/** The configuration written to a file, as an operator's would be. */
function writeTemp(o: object): string {
  const path = join(mkdtempSync(join(tmpdir(), 'ac-routes-')), 'bridge.json');
  writeFileSync(path, JSON.stringify(o));
  return path;
}
