// The OSCQuery namespace a bridge serves (bridge/oscquery): every address a target receives, with
// its TYPE, RANGE and DESCRIPTION, from the layout's own addresses or the target's routes; the
// JSON tree as the OSCQuery proposal's examples shape it; and seeded random routes, whose every
// routed value lies in the RANGE the namespace gives for its address.
import { describe, expect, it } from 'vitest';
import { bridgeMethods, targetMethods, type LayoutControls, type Method } from '../../bridge/oscquery/namespace.js';
import { Tree } from '../../bridge/oscquery/tree.js';
import { messageArgs } from '../../bridge/osc.js';
import { Router, type RouteConfig } from '../../bridge/routes.js';
import type { Control } from '../../schemas/types.js';
import { fuzzSeed, seededRandom } from '../helpers/seeded-random.js';

const CONTROLS: Control[] = [
  { lid: 1, address: '/001', type: 'Button', props: { label: 'Go' } },
  { lid: 2, address: '/002', type: 'Slider', props: { label: 'Opacity' } },
  { lid: 3, address: '/003', type: 'Toggle', props: { label: 'Strobe' } },
  { lid: 4, address: '/004', type: 'Index', props: { label: 'Colour' }, options: [{ index: 0, label: 'Red' }, { index: 1, label: 'Blue' }] },
  { lid: 5, address: '/005', type: 'String', props: { label: 'Shout' } },
  { lid: 6, address: '/006', type: 'XYPad', props: { label: 'Spot' } },
  { lid: 10, address: '/010', type: 'Slider', props: { label: 'Crowd level' }, aggregate: { mode: 'mean' } },
  { lid: 11, address: '/011', type: 'Index', props: { label: 'Vote' }, options: [{ index: 0, label: 'A' }, { index: 1, label: 'B' }], aggregate: { mode: 'votes', cue: { share: 0.6 } } },
];
const LAYOUT: LayoutControls = { name: 'Show', zones: ['left'], pages: [{ pageId: 'main', name: 'Main', controls: CONTROLS }] };
const byAddress = (ms: Method[]) => new Map(ms.map((m) => [m.address, m]));

describe('OSCQuery namespace: the layout as a target without routes receives it', () => {
  const ms = byAddress(targetMethods(LAYOUT, { booleans: 'int', unrouted: 'send' }, 'show#0'));

  it('gives every plain control its OSC type, range and label', () => {
    expect(ms.get('/001')).toMatchObject({ type: 'i', range: [{ VALS: [1] }], description: 'Go' });
    expect(ms.get('/002')).toMatchObject({ type: 'f', range: [{ MIN: 0, MAX: 1 }], description: 'Opacity' });
    expect(ms.get('/003')).toMatchObject({ type: 'i', range: [{ VALS: [0, 1] }], description: 'Strobe' });
    expect(ms.get('/004')).toMatchObject({ type: 'i', range: [{ VALS: [0, 1] }], description: 'Colour (0 Red, 1 Blue)' });
    expect(ms.get('/005')).toMatchObject({ type: 's', range: [null], description: 'Shout' });
    expect(ms.get('/006')).toMatchObject({ type: 'ff', range: [{ MIN: 0, MAX: 1 }, { MIN: 0, MAX: 1 }] });
    expect(ms.get('/001')!.source).toBe('show#0');
  });

  it("gives an aggregated control its crowd value, count, spread, zones and cue, and not its plain action's type", () => {
    expect(ms.get('/010')).toMatchObject({ type: 'f', range: [{ MIN: 0, MAX: 1 }], description: "Crowd level: the crowd's mean" });
    expect(ms.get('/010/n')).toMatchObject({ type: 'i', range: [{ MIN: 0 }], description: "Crowd level: the crowd's participants counted" });
    expect(ms.get('/010/sd')).toMatchObject({ type: 'f', range: [{ MIN: 0, MAX: 0.5 }] });
    expect(ms.get('/010/zone/left')).toMatchObject({ type: 'f', description: "Crowd level: the crowd's mean in zone left" });
    expect(ms.get('/010/zone/left/n')).toMatchObject({ type: 'i', range: [{ MIN: 0 }] });
    expect(ms.get('/011')).toMatchObject({ type: 'ii', range: [{ MIN: 0 }, { MIN: 0 }], description: "Vote: the crowd's votes per option (0 A, 1 B)" });
    expect(ms.get('/011/cue')).toMatchObject({ type: 'i', range: [{ VALS: [0, 1] }], description: "Vote: the crowd's decision, the winning option (0 A, 1 B)" });
    expect(ms.has('/011/sd')).toBe(false); // votes have no spread
  });

  it('gives a Toggle sent as T/F the type T and no range', () => {
    const tf = byAddress(targetMethods(LAYOUT, { booleans: 'TF', unrouted: 'send' }, 'show#0'));
    expect(tf.get('/003')).toMatchObject({ type: 'T', range: [null] });
  });
});

describe("OSCQuery namespace: a target's routes", () => {
  const routes: RouteConfig[] = [
    { lid: 2, address: '/composition/layers/1/video/opacity', range: [0, 1] },
    { lid: 2, address: '/dimmer', range: [0, 255], int: true },
    { lid: 4, options: { 0: '/cue/red/go', 1: '/cue/blue/go' } },
    { lid: 1, address: '/gma3/cmd', args: ['Go+ Executor 201'] },
    { lid: 6, address: '/pan-tilt', range: [100, -100] },
    { lid: 10, crowd: true, address: '/composition/master', range: [0, 255], int: true },
    { lid: 10, zone: 'left', address: '/left' },
    { lid: 11, cue: true, address: '/cue/vote/go', args: [] },
  ];
  const ms = byAddress(targetMethods(LAYOUT, { booleans: 'int', routes, unrouted: 'drop' }, 'show#1'));

  it('describes the addresses the routes make, and nothing the target does not receive', () => {
    expect([...ms.keys()].sort()).toEqual(['/composition/layers/1/video/opacity', '/composition/master', '/cue/blue/go', '/cue/red/go', '/cue/vote/go', '/dimmer', '/gma3/cmd', '/left', '/pan-tilt']);
  });

  it('gives each routed address the scale, type and fixed arguments the route sends', () => {
    expect(ms.get('/dimmer')).toMatchObject({ type: 'i', range: [{ MIN: 0, MAX: 255 }], description: 'Opacity' });
    expect(ms.get('/pan-tilt')).toMatchObject({ type: 'ff', range: [{ MIN: -100, MAX: 100 }, { MIN: -100, MAX: 100 }] });
    expect(ms.get('/cue/red/go')).toMatchObject({ type: '', range: [], description: 'Colour: Red' });
    expect(ms.get('/gma3/cmd')).toMatchObject({ type: 's', range: [{ VALS: ['Go+ Executor 201'] }], description: 'Go' });
    expect(ms.get('/composition/master')).toMatchObject({ type: 'i', range: [{ MIN: 0, MAX: 255 }], description: "Crowd level: the crowd's mean" });
    expect(ms.get('/left')).toMatchObject({ type: 'f', range: [{ MIN: 0, MAX: 1 }], description: "Crowd level: the crowd's mean in zone left" });
    expect(ms.get('/cue/vote/go')).toMatchObject({ type: '' });
  });

  it('describes an address two sources play once, by the first, and names the conflict', () => {
    const { methods, conflicts } = bridgeMethods([
      { layoutId: 'a', controls: LAYOUT, targets: [{ booleans: 'int', unrouted: 'send' }, { booleans: 'int', unrouted: 'send' }] },
      { layoutId: 'b', controls: { ...LAYOUT, pages: [{ pageId: 'p', name: 'P', controls: [{ lid: 2, address: '/002', type: 'String', props: { label: 'Other' } }] }] }, targets: [{ booleans: 'int', unrouted: 'send' }] },
      { layoutId: 'unreadable', controls: null, targets: [{ booleans: 'int', unrouted: 'send' }] },
    ]);
    expect(methods.get('/002')).toMatchObject({ type: 'f', source: 'a#0' });
    expect(conflicts).toEqual([expect.stringMatching(/^\/002: described by a#0 \(Opacity\), also played by b#0 \(Other\)$/)]);
  });
});

describe('OSCQuery namespace: the JSON tree', () => {
  const tree = new Tree(targetMethods(LAYOUT, { booleans: 'int', unrouted: 'send' }, 'show#0'), 'test bridge');

  it('nests containers and methods as the proposal\'s examples do, a method that is also a container keeping both', () => {
    expect(tree.root).toMatchObject({ FULL_PATH: '/', ACCESS: 0, DESCRIPTION: 'test bridge' });
    expect(tree.root.CONTENTS!['002']).toEqual({ FULL_PATH: '/002', ACCESS: 1, TYPE: 'f', RANGE: [{ MIN: 0, MAX: 1 }], DESCRIPTION: 'Opacity' });
    const crowd = tree.find('/010')!;
    expect(crowd).toMatchObject({ FULL_PATH: '/010', TYPE: 'f', ACCESS: 1 });
    expect(Object.keys(crowd.CONTENTS!).sort()).toEqual(['n', 'sd', 'zone']);
    expect(tree.find('/010/zone')).toMatchObject({ FULL_PATH: '/010/zone', ACCESS: 0, CONTENTS: { left: { FULL_PATH: '/010/zone/left' } } });
    expect(tree.find('/010/zone/')).toBe(tree.find('/010/zone'));
    expect(tree.find('/nothing')).toBeUndefined();
  });

  it('keeps the last value played at a method, as JSON values, and none at a container', () => {
    tree.setValue('/006', [{ type: 'float', value: 0.25 }, { type: 'float', value: 0.5 }]);
    tree.setValue('/010/zone', [{ type: 'float', value: 1 }]);
    expect(tree.find('/006')!.VALUE).toEqual([0.25, 0.5]);
    expect(tree.find('/010/zone')!.VALUE).toBeUndefined();
  });
});

describe('OSCQuery namespace: seeded random routes', () => {
  it('puts every value a route sends inside the RANGE the namespace gives its address', () => {
    const seed = fuzzSeed();
    const rand = seededRandom(seed);
    const num = () => Math.round((rand() - 0.5) * 2000) / 4;
    try {
      for (let round = 0; round < 300; round++) {
        const lid = [2, 3, 4, 6][Math.floor(rand() * 4)]!;
        const route: RouteConfig = lid === 4 ? { lid, options: { 0: '/o/0', 1: '/o/1' } } : { lid, address: '/r', ...(rand() < 0.7 && { range: [num(), num()] as [number, number] }), ...(rand() < 0.4 && { int: true }) };
        if (route.range && route.range[0] === route.range[1]) continue;
        const ms = byAddress(targetMethods(LAYOUT, { booleans: 'int', routes: [route], unrouted: 'drop' }, 's#0'));
        const c = CONTROLS.find((x) => x.lid === lid)!;
        const router = new Router([route], 'drop');
        for (let k = 0; k < 20; k++) {
          const value = c.type === 'Slider' ? rand() : c.type === 'XYPad' ? [rand(), rand()] : c.type === 'Toggle' ? rand() < 0.5 : Math.floor(rand() * 2);
          for (const m of router.action({ lid, address: c.address, type: c.type, value: value as never })) {
            const method = ms.get(m.address);
            expect(method, m.address).toBeDefined();
            messageArgs(m, 'int').forEach((a, j) => {
              const r = method!.range[j];
              if (!r || !('value' in a)) return;
              if (r.VALS) expect(r.VALS).toContain(a.value);
              else {
                if (r.MIN !== undefined) expect(a.value as number).toBeGreaterThanOrEqual(r.MIN - 1e-3);
                if (r.MAX !== undefined) expect(a.value as number).toBeLessThanOrEqual(r.MAX + 1e-3);
              }
            });
          }
        }
      }
    } catch (e) {
      throw new Error(`OSCQuery range fuzz failed with FUZZ_SEED=${seed}: ${(e as Error).message}`);
    }
  });
});
