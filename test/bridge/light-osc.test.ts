// OSC into the crowd's light, end to end with real processes: liblo's oscsend sends /light/left to
// a real bridge's light OSC port; the bridge, under its own least-privilege Redis user (audiencectl
// bridge grant), appends the look to the layout's light stream, and a real gateway sends it to the
// left zone's phones and no others. A burst faster than 44 looks a second per zone is folded into
// its newest (counted), and what is no look (not OSC, a bad address, bad arguments, a zone the
// canvas does not light) is refused, counted, and the bridge plays on.
import { execFile } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { toBuffer } from 'osc-min';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lookFromOsc } from '../../bridge/light-osc.js';
import type { LayoutDefinition } from '../../schemas/types.js';
import type { GatewayProcess } from '../helpers/gateway-process.js';
import { DEMO_LAYOUT, eventually, postJson } from '../helpers/gateway.js';
import { connectLive, type LiveClient } from '../helpers/live.js';
import { sample, scrape } from '../helpers/metrics.js';
import { startLightShow, type LightShow } from '../helpers/light-show.js';
import { useRedis } from '../helpers/redis.js';

const LAYOUT = 'osc-lit';
const CANVAS: LayoutDefinition = { ...DEMO_LAYOUT, layoutId: LAYOUT, zones: ['left', 'right', 'balcony'], light: { zones: ['left', 'right'] } };
const redis = useRedis();
const phones: LiveClient[] = [];
let show: LightShow;
let gateway: GatewayProcess;
let apiKey = '';
let oscPort = 0;
let opsPort = 0;
let bridgeOutput: () => string = () => '';

beforeAll(async () => {
  show = await startLightShow(redis.get().server.url, CANVAS, { bridgeLayout: { lightOscPort: 0 } });
  ({ gateway, apiKey, bridgeOutput, lightOscPort: oscPort, bridgeOpsPort: opsPort } = show);
}, 60_000);
afterAll(async () => {
  for (const p of phones) p.ws.terminate();
  await show?.stop();
});

async function phone(zone: string): Promise<LiveClient> {
  const r = await postJson(`${gateway.url}/token`, { layoutId: LAYOUT, zone }, { 'x-api-key': apiKey });
  const s = await connectLive(gateway.url, (r.body as { token: string }).token);
  phones.push(s);
  return s;
}
const lights = (s: LiveClient) => s.frames.filter((f) => f.op === 'light');
const oscsend = (...args: string[]) =>
  new Promise<void>((resolve, reject) => execFile('oscsend', ['127.0.0.1', String(oscPort), ...args], (e) => (e ? reject(new Error(`oscsend ${args.join(' ')}: ${e.message}`)) : resolve())));
const udp = createSocket('udp4');
const datagram = (b: Buffer | DataView) => new Promise<void>((resolve) => udp.send(b instanceof Buffer ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength), oscPort, '127.0.0.1', () => resolve()));
afterAll(() => udp.close());

describe('light looks from OSC', () => {
  it("oscsend /light/left lights the left zone's phones and no others, through the bridge's own Redis user", async () => {
    const [left, right, balcony] = await Promise.all([phone('left'), phone('right'), phone('balcony')]);
    await new Promise((r) => setTimeout(r, 300));
    await oscsend('/light/left', 'sff', '#FF0000', '0.75', '300');
    await eventually(() => lights(left).length > 0, 5000);
    expect(lights(left)[0]).toMatchObject({ op: 'light', zone: 'left', color: '#ff0000', brightness: 0.75, fadeMs: 300 });
    await oscsend('/light/left/wave', 'sfff', '#00ff00', '90', '0.5', '0.3');
    await eventually(() => lights(left).length > 1, 5000);
    expect(lights(left)[1]).toMatchObject({ zone: 'left', color: '#00ff00', pattern: { type: 'wave', direction: 90, speed: 0.5, width: 0.3 } });
    await new Promise((r) => setTimeout(r, 300));
    expect(lights(right)).toEqual([]);
    expect(lights(balcony)).toEqual([]);
    await oscsend('/light/strobe', 'sf', '#ffffff', '10');
    for (const s of [left, right, balcony]) await eventually(() => lights(s).some((f) => f.zone === '*'), 5000);
    expect(bridgeOutput()).not.toMatch(/NOPERM/);
  });

  it('a burst faster than 44 looks a second per zone is folded into its newest, counted, and the newest plays last', async () => {
    const right = await phone('right');
    await new Promise((r) => setTimeout(r, 300));
    const before = sample(await scrape(opsPort), `audience_bridge_light_looks_folded_total{layout="${LAYOUT}"}`);
    const n = 200;
    for (let i = 0; i < n; i++) await datagram(toBuffer({ address: '/light/right', args: [{ type: 'string', value: '#0000ff' }, { type: 'float', value: (i + 1) / n }] }));
    await eventually(() => lights(right).some((f) => f.brightness === 1), 5000);
    await new Promise((r) => setTimeout(r, 300));
    const seen = lights(right).filter((f) => f.color === '#0000ff');
    expect(seen.at(-1)!.brightness).toBe(1);
    // brightness only grows: nothing older came after something newer
    expect(seen.map((f) => f.brightness)).toEqual([...seen.map((f) => f.brightness as number)].sort((a, b) => a - b));
    const folded = sample(await scrape(opsPort), `audience_bridge_light_looks_folded_total{layout="${LAYOUT}"}`) - before;
    expect(seen.length + folded).toBe(n);
    expect(folded).toBeGreaterThan(0);
  });

  it('what is no look is refused and counted by reason, and the bridge plays the next look', async () => {
    const left = await phone('left');
    await new Promise((r) => setTimeout(r, 300));
    await datagram(Buffer.from('not osc at all'));
    await oscsend('/lights/left', 's', '#ff0000');
    await oscsend('/light/left', 'i', '5');
    await oscsend('/light/left/strobe', 's', '#ff0000');
    await oscsend('/light/left', 'sf', '#ff0000', '2');
    await oscsend('/light/balcony', 's', '#ff0000');
    await oscsend('/light/left', 's', '#123456');
    await eventually(() => lights(left).some((f) => f.color === '#123456'), 5000);
    const text = await scrape(opsPort);
    for (const reason of ['not_osc', 'address', 'arguments', 'value', 'zone_not_on_canvas']) {
      expect(sample(text, `audience_bridge_light_refused_total{layout="${LAYOUT}",reason="${reason}"}`), reason).toBeGreaterThan(0);
    }
    expect(lights(left).filter((f) => f.color === '#ff0000')).toEqual([]);
  });
});

describe('an OSC message as a look', () => {
  it('reads each address and its arguments, and refuses what does not fit', () => {
    const s = (value: string) => ({ type: 'string', value });
    const f = (value: number) => ({ type: 'float', value });
    const i = (value: number) => ({ type: 'integer', value });
    expect(lookFromOsc('/light', [s('#ABCDEF')])).toEqual({ look: { zone: '*', color: '#abcdef' } });
    expect(lookFromOsc('/light/*', [s('#000000'), f(0)])).toEqual({ look: { zone: '*', color: '#000000', brightness: 0 } });
    expect(lookFromOsc('/light/left', [s('#ffffff'), f(0.5), i(250)])).toEqual({ look: { zone: 'left', color: '#ffffff', brightness: 0.5, fadeMs: 250 } });
    expect(lookFromOsc('/light/left/off', [])).toEqual({ look: { zone: 'left', off: true } });
    expect(lookFromOsc('/light/off', [])).toEqual({ look: { zone: '*', off: true } });
    expect(lookFromOsc('/light/left/strobe', [s('#ffffff'), i(2), f(0.4)])).toEqual({ look: { zone: 'left', color: '#ffffff', pattern: { type: 'strobe', hz: 2 }, brightness: 0.4 } });
    expect(lookFromOsc('/light/wave', [s('#ffffff'), f(45), f(1)])).toEqual({ look: { zone: '*', color: '#ffffff', pattern: { type: 'wave', direction: 45, speed: 1 } } });
    for (const [address, args, reason] of [
      ['/lights', [s('#ffffff')], 'address'],
      ['/light/left/spin', [s('#ffffff')], 'address'],
      ['/light/a/b/c', [s('#ffffff')], 'address'],
      ['/light/le ft', [s('#ffffff')], 'address'],
      ['/light/left', [], 'arguments'],
      ['/light/left', [f(1)], 'arguments'],
      ['/light/left', [s('#ffffff'), s('x')], 'arguments'],
      ['/light/left/off', [s('#ffffff')], 'arguments'],
      ['/light/left/wave', [s('#ffffff'), f(1)], 'arguments'],
      ['/light/left', [s('#ffffff'), f(1), f(1), f(1)], 'arguments'],
      ['/light/left', [s('red')], 'value'],
      ['/light/left', [s('#ffffff'), f(1.5)], 'value'],
      ['/light/left/strobe', [s('#ffffff'), f(100)], 'value'],
    ] as const) {
      expect(lookFromOsc(address, args as never), `${address} ${JSON.stringify(args)}`).toMatchObject({ refused: reason });
    }
  });
});
