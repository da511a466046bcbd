// A target's routes through the real processes: actions through a gateway process, a bridge process
// with two targets, each a liblo oscdump (an independent OSC decoder). The routed target receives
// what its routes say (a Slider scaled as a float and as an int, an Index on its option's address,
// a Button as fixed typed arguments, a crowd value scaled to an int, a vote's cue as a console
// command) and nothing for the controls it does not route (unrouted: drop, counted in
// audience_bridge_unrouted_dropped_total); the target without routes receives the layout's own
// addresses, as before.
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LayoutDefinition } from '../../schemas/types.js';
import { configFile, spawnBridge, stopProcess } from '../helpers/bridge.js';
import { eventually, mintToken, postAction } from '../helpers/gateway.js';
import { gatewayWithLayout, type GatewayProcess } from '../helpers/gateway-process.js';
import { startOscdump, type Oscdump } from '../helpers/oscdump.js';
import { useRedis } from '../helpers/redis.js';

const LAYOUT: LayoutDefinition = {
  layoutId: 'routed-show',
  name: 'Routed show',
  activePageId: 'main',
  zones: ['left', 'right'],
  pages: [{
    pageId: 'main',
    name: 'Main',
    controls: [
      { lid: 1, address: '/001', type: 'Button', props: { label: 'Go' } },
      { lid: 2, address: '/002', type: 'Slider', props: { label: 'Opacity' } },
      { lid: 4, address: '/004', type: 'Index', props: { label: 'Colour' }, options: [{ index: 0, label: 'Red' }, { index: 1, label: 'Blue' }] },
      { lid: 5, address: '/005', type: 'String', props: { label: 'Shout' } },
      { lid: 10, address: '/010', type: 'Slider', props: { label: 'Crowd level' }, aggregate: { mode: 'mean', windowMs: 60_000 } },
      { lid: 11, address: '/011', type: 'Index', props: { label: 'Vote' }, options: [{ index: 0, label: 'A' }, { index: 1, label: 'B' }], aggregate: { mode: 'votes', windowMs: 60_000, cue: { quorum: 3, share: 0.6, holdMs: 200 } } },
    ],
  }],
};
const ROUTES = [
  { lid: 2, address: '/composition/layers/1/video/opacity', range: [0, 1] },
  { lid: 2, address: '/dimmer', range: [0, 255], int: true },
  { lid: 4, options: { 0: '/cue/red/go', 1: '/cue/blue/go' } },
  { lid: 1, address: '/cue/12/go', args: [] },
  { lid: 1, address: '/mix', args: ['Go+ Executor 201', 7, 0.5, { f: 2 }] },
  { lid: 10, crowd: true, address: '/composition/master', range: [0, 255], int: true },
  { lid: 11, cue: true, address: '/gma3/cmd', args: ['Go+ Executor 201'] },
];

const redis = useRedis();
let gateway: GatewayProcess;
let bridge: ChildProcess;
let bridgeOutput: () => string;
let routed: Oscdump;
let plain: Oscdump;
let apiKey: string;

beforeAll(async () => {
  let prefix: string;
  ({ gateway, apiKey, prefix } = await gatewayWithLayout(redis.get().server.url, LAYOUT));
  routed = await startOscdump();
  plain = await startOscdump();
  const config = configFile({
    redisUrl: redis.get().server.url,
    prefix,
    layouts: [{ layoutId: LAYOUT.layoutId, tickHz: 100, targets: [{ host: '127.0.0.1', port: routed.port, routes: ROUTES, unrouted: 'drop' }, { host: '127.0.0.1', port: plain.port }] }],
  });
  ({ child: bridge, output: bridgeOutput } = await spawnBridge(['--config', config]));
}, 60_000);
afterAll(async () => {
  if (bridge) await stopProcess(bridge);
  routed?.child.kill();
  plain?.child.kill();
  gateway?.child.kill('SIGTERM');
});

const raws = (d: Oscdump, address: string) => d.lines.filter((l) => l.address === address).map((l) => l.raw.replace(/^[0-9a-f]{8}\.[0-9a-f]{8} /, ''));

describe('routes through a real bridge', () => {
  it('sends each routed action as its route says, drops the unrouted ones (counted), and leaves the target without routes as it was', async () => {
    const token = await mintToken(gateway, LAYOUT.layoutId, apiKey);
    const act = async (body: object) => expect((await postAction(gateway, token, { layoutId: LAYOUT.layoutId, ...body })).status).toBe(200);
    await act({ lid: 2, type: 'Slider', value: 0.75 });
    await act({ lid: 4, type: 'Index', value: 1 });
    await act({ lid: 1, type: 'Button' });
    await act({ lid: 5, type: 'String', value: 'hello' });
    await eventually(() => plain.saw('/005') && routed.saw('/mix') && routed.saw('/cue/blue/go') && routed.saw('/dimmer'));
    expect(raws(routed, '/composition/layers/1/video/opacity')).toEqual(['/composition/layers/1/video/opacity f 0.750000']);
    expect(raws(routed, '/dimmer')).toEqual(['/dimmer i 191']);
    expect(raws(routed, '/cue/blue/go')).toEqual(['/cue/blue/go ']);
    expect(raws(routed, '/cue/12/go')).toEqual(['/cue/12/go ']);
    expect(raws(routed, '/mix')).toEqual(['/mix siff "Go+ Executor 201" 7 0.500000 2.000000']);
    // nothing at the layout's own addresses on the routed target; all of them on the other
    expect(routed.lines.filter((l) => /^\/0\d\d/.test(l.address))).toEqual([]);
    expect(['/001', '/002', '/004', '/005'].every((a) => plain.saw(a))).toBe(true);
    const ops = Number(/"opsPort":(\d+)/.exec(bridgeOutput())![1]);
    await eventually(async () => /audience_bridge_unrouted_dropped_total\{target="127\.0\.0\.1:\d+"\} 1\b/.test(await (await fetch(`http://127.0.0.1:${ops}/metrics`)).text()));
  });

  it('sends a crowd value scaled to an int and a vote\'s cue as a console command', async () => {
    const tokens = await Promise.all(Array.from({ length: 4 }, () => mintToken(gateway, LAYOUT.layoutId, apiKey)));
    for (const t of tokens) {
      expect((await postAction(gateway, t, { layoutId: LAYOUT.layoutId, lid: 10, type: 'Slider', value: 1 })).status).toBe(200);
      expect((await postAction(gateway, t, { layoutId: LAYOUT.layoutId, lid: 11, type: 'Index', value: 1 })).status).toBe(200);
    }
    await eventually(() => raws(routed, '/composition/master').includes('/composition/master i 255') && routed.saw('/gma3/cmd'));
    expect(raws(routed, '/gma3/cmd')).toEqual(['/gma3/cmd s "Go+ Executor 201"']);
    await eventually(() => plain.saw('/011/cue'));
    expect(routed.lines.filter((l) => /^\/01[01]/.test(l.address))).toEqual([]);
  });
});
