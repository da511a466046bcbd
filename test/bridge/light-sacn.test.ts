// The lighting desk plays the crowd, end to end with real processes: OLA's olad, on a host of its
// own, sends sACN (E1.31) multicast for a universe (frames fed in by OLA's ola_streaming_client); a
// real bridge, on the test's host and under its own least-privilege Redis user, listens for the
// universe the layout's light canvas patches, turns each zone's fixture (dimmer, red, green, blue,
// strobe, pattern) into a look, and appends only what changed; a real gateway sends each look to
// its zone's phones and no others. A second desk at a lower sACN priority is not played.
import { createSocket } from 'node:dgram';
import { Packet } from 'sacn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lookFromDmx } from '../../bridge/light-dmx.js';
import type { LayoutDefinition } from '../../schemas/types.js';
import { configFile, runBridge } from '../helpers/bridge.js';
import { audiencectl, audiencectlJson } from '../helpers/cli.js';
import type { GatewayProcess } from '../helpers/gateway-process.js';
import { DEMO_LAYOUT, eventually, postJson } from '../helpers/gateway.js';
import { Hosts } from '../helpers/hosts.js';
import { connectLive, type LiveClient } from '../helpers/live.js';
import { sample, scrape } from '../helpers/metrics.js';
import { startDesk, type Desk } from '../helpers/ola.js';
import { startLightShow, type LightShow } from '../helpers/light-show.js';
import { useRedis } from '../helpers/redis.js';
import { seededRandom } from '../helpers/seeded-random.js';

const LAYOUT = 'desk-lit';
/** a universe of this run's own: another program's sACN on this machine is not this test's */
const UNIVERSE = 1000 + Math.floor(Math.random() * 60_000);
const ADDRESS = 101;
const CANVAS: LayoutDefinition = { ...DEMO_LAYOUT, layoutId: LAYOUT, zones: ['left', 'right', 'balcony'], light: { zones: ['left', 'right'], dmx: { universe: UNIVERSE, address: ADDRESS } } };
const redis = useRedis();
const hosts = new Hosts();
let show: LightShow;
const env = () => show.env;
const phones: LiveClient[] = [];
let gateway: GatewayProcess;
let desk: Desk;
let backup: Desk;
let apiKey = '';
let opsPort = 0;
let bridgeOutput: () => string = () => '';

/** A universe's channels from 1 with the left fixture's six and the right's set (the rest 0). */
function frame(left: readonly number[], right: readonly number[]): number[] {
  const channels = new Array<number>(ADDRESS - 1 + 12).fill(0);
  channels.splice(ADDRESS - 1, 6, ...left);
  channels.splice(ADDRESS + 5, 6, ...right);
  return channels;
}

beforeAll(async () => {
  hosts.start();
  show = await startLightShow(redis.get().server.url, CANVAS, { bridgeConfig: { sacn: { interface: hosts.self } } });
  ({ gateway, apiKey, bridgeOutput, bridgeOpsPort: opsPort } = show);
  expect(bridgeOutput()).toMatch(new RegExp(`"universes":\\[${UNIVERSE}\\][^\\n]*sACN input listening`));
  desk = await startDesk(hosts, hosts.add('desk', 2), UNIVERSE);
  backup = await startDesk(hosts, hosts.add('backup', 3), UNIVERSE, 50);
}, 90_000);
afterAll(async () => {
  for (const p of phones) p.ws.terminate();
  hosts.remove();
  await show?.stop();
});

async function phone(zone: string): Promise<LiveClient> {
  const r = await postJson(`${gateway.url}/token`, { layoutId: LAYOUT, zone }, { 'x-api-key': apiKey });
  const s = await connectLive(gateway.url, (r.body as { token: string }).token);
  phones.push(s);
  return s;
}
const lights = (s: LiveClient) => s.frames.filter((f) => f.op === 'light');
const settle = (ms = 400) => new Promise((r) => setTimeout(r, ms));

describe('the lighting desk over sACN', () => {
  it('audiencectl layout show gives the lighting programmer the patch: each zone\'s fixture and its address', async () => {
    const human = await audiencectl(env(), 'layout', 'show', LAYOUT);
    expect(human.stdout).toContain(`light: lead 150 ms, zones left, right; sACN universe ${UNIVERSE}: left at ${ADDRESS}, right at ${ADDRESS + 6} (6 channels each: dimmer, red, green, blue, strobe, pattern)`);
    const json = await audiencectlJson(env(), 'layout', 'show', LAYOUT);
    expect(json.light).toEqual({ lightLeadMs: 150, zones: ['left', 'right'], dmx: { universe: UNIVERSE, address: ADDRESS }, fixtures: [{ zone: 'left', address: ADDRESS }, { zone: 'right', address: ADDRESS + 6 }] });
  });

  it("plays each zone's fixture to that zone's phones and no others, through the bridge's own Redis user; a frame that changes nothing appends nothing", async () => {
    const [left, right, balcony] = await Promise.all([phone('left'), phone('right'), phone('balcony')]);
    await settle();
    desk.send(frame([255, 255, 0, 0, 0, 0], [128, 0, 0, 255, 0, 0]));
    await eventually(() => lights(left).length > 0 && lights(right).length > 0, 5000).catch((e: Error) => {
      throw new Error(`${e.message}; the desk said: ${desk.output().slice(-2000)}; the bridge said: ${bridgeOutput().slice(-2000)}`);
    });
    expect(lights(left)).toEqual([expect.objectContaining({ op: 'light', zone: 'left', color: '#ff0000', brightness: 1 })]);
    expect(lights(right)).toEqual([expect.objectContaining({ op: 'light', zone: 'right', color: '#0000ff', brightness: 0.502 })]);
    expect(lights(left)[0]!.pattern).toBeUndefined();
    // the desk sends the same universe again and again: nothing new reaches a phone
    for (let i = 0; i < 10; i++) {
      desk.send(frame([255, 255, 0, 0, 0, 0], [128, 0, 0, 255, 0, 0]));
      await settle(30);
    }
    // only the left fixture changes
    desk.send(frame([255, 0, 255, 0, 0, 0], [128, 0, 0, 255, 0, 0]));
    await eventually(() => lights(left).length > 1, 5000);
    await settle();
    expect(lights(left).map((f) => f.color)).toEqual(['#ff0000', '#00ff00']);
    expect(lights(right)).toHaveLength(1);
    expect(lights(balcony)).toEqual([]);
    expect(bridgeOutput()).not.toMatch(/NOPERM/);
    expect(sample(await scrape(opsPort), 'audience_bridge_sacn_packets_total')).toBeGreaterThanOrEqual(12);
  });

  it('plays a chase in order, its last step last; the strobe and pattern channels, and all six at 0 (off)', async () => {
    const left = await phone('left');
    await settle();
    const steps = 20;
    for (let i = 1; i <= steps; i++) {
      desk.send(frame([i * 10, 0, 0, 200, 0, 0], [0, 0, 0, 0, 0, 0]));
      await settle(40);
    }
    await eventually(() => lights(left).some((f) => f.brightness === Number((200 / 255).toFixed(4))), 5000);
    await settle();
    const chase = lights(left).filter((f) => f.color === '#0000c8').map((f) => f.brightness as number);
    expect(chase.at(-1)).toBe(Number((200 / 255).toFixed(4)));
    expect(chase).toEqual([...chase].sort((a, b) => a - b));
    expect(chase.length).toBeGreaterThan(steps / 2);
    desk.send(frame([255, 255, 255, 255, 255, 0], [255, 255, 255, 255, 0, 129]));
    await eventually(() => lights(left).some((f) => (f.pattern as { type?: string } | undefined)?.type === 'strobe'), 5000);
    expect(lights(left).at(-1)).toMatchObject({ color: '#ffffff', pattern: { type: 'strobe', hz: 25 } });
    desk.send(frame([0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]));
    await eventually(() => lights(left).at(-1)?.off === true, 5000);
    expect(lights(left).at(-1)).toEqual(expect.objectContaining({ zone: 'left', off: true }));
  });

  it('a desk at a lower sACN priority is not played while the higher one is heard', async () => {
    const left = await phone('left');
    await settle();
    desk.send(frame([255, 10, 20, 30, 0, 0], [0, 0, 0, 0, 0, 0]));
    await eventually(() => lights(left).some((f) => f.color === '#0a141e'), 5000);
    const before = sample(await scrape(opsPort), 'audience_bridge_sacn_ignored_total{reason="lower_priority"}') || 0;
    for (let i = 0; i < 5; i++) {
      backup.send(frame([255, 99, 99, 99, 0, 0], [255, 99, 99, 99, 0, 0]));
      await settle(50);
    }
    await eventually(async () => sample(await scrape(opsPort), 'audience_bridge_sacn_ignored_total{reason="lower_priority"}') >= before + 5, 5000).catch(async (e: Error) => {
      throw new Error(`${e.message}: ${(await scrape(opsPort)).split('\n').filter((l) => l.includes('sacn')).join('; ')}; left saw ${JSON.stringify(lights(left))}; the backup said ${backup.output().slice(-1000)}`);
    });
    expect(lights(left).filter((f) => f.color === '#636363')).toEqual([]);
  });
});

describe('the sACN input under fuzz', () => {
  it('takes thousands of datagrams that are no DMX, counts them, stays up, and plays the next good packet', async () => {
    const seed = Number(process.env.TEST_SEED ?? Date.now() % 1_000_000);
    const random = seededRandom(seed);
    const left = await phone('left');
    await settle();
    // unicast to the bridge's sACN port, as a desk may send it: bytes made by the library's own encoder, then broken
    const good = (rgb: number[], sequence: number) => {
      const payload = Object.fromEntries(frame([255, ...rgb, 0, 0], [0, 0, 0, 0, 0, 0]).map((v, i) => [i + 1, v])); // the library's channels count from 1
      return new Packet({ universe: UNIVERSE, sequence, payload, useRawDmxValues: true, sourceName: 'fuzz' }).buffer;
    };
    const udp = createSocket('udp4');
    const send = (b: Buffer) => new Promise<void>((resolve) => udp.send(b, 5568, '127.0.0.1', () => resolve()));
    const before = sample(await scrape(opsPort), 'audience_bridge_sacn_ignored_total{reason="not_dmx"}') || 0;
    try {
      for (let i = 0; i < 2000; i++) {
        const kind = i % 3;
        let b: Buffer;
        if (kind === 0) b = Buffer.from(Array.from({ length: Math.floor(random() * 700) }, () => Math.floor(random() * 256)));
        else if (kind === 1) b = good([1, 2, 3], i % 256).subarray(0, Math.floor(random() * 126));
        else {
          b = Buffer.from(good([4, 5, 6], i % 256));
          for (let k = 0; k < 1 + Math.floor(random() * 8); k++) b[Math.floor(random() * 126)] = Math.floor(random() * 256);
        }
        await send(b);
        if (i % 200 === 0) await settle(5);
      }
      // then a desk's steady stream: a broken packet may have posed as a source of higher priority
      // (heard for 2.5 s after its last packet) or moved the library's sequence far away
      let sequence = 0;
      const desk = setInterval(() => void send(good([7, 8, 9], ++sequence % 256)), 100);
      await eventually(() => lights(left).some((f) => f.color === '#070809'), 8000).finally(() => clearInterval(desk)).catch((e: Error) => {
        throw new Error(`seed ${seed}: ${e.message}; the bridge said: ${bridgeOutput().slice(-2000)}`);
      });
    } finally {
      udp.close();
    }
    expect(sample(await scrape(opsPort), 'audience_bridge_sacn_ignored_total{reason="not_dmx"}'), `seed ${seed}`).toBeGreaterThan(before + 500);
    expect(bridgeOutput(), `seed ${seed}`).not.toMatch(/uncaught|unhandled|FATAL/i);
  });
});

describe("the bridge's sACN settings", () => {
  it('are checked: a port, and the address of an interface', async () => {
    const base = { redisUrl: 'redis://127.0.0.1:1', prefix: 'x:', layouts: [{ layoutId: 'show', targets: [{ host: 'a', port: 1 }] }] };
    expect((await runBridge(['--config', configFile({ ...base, more: { sacn: {} } }), '--check-config'])).code).toBe(0);
    expect((await runBridge(['--config', configFile({ ...base, more: { sacn: { port: 5568, interface: '10.1.2.3' } } }), '--check-config'])).code).toBe(0);
    for (const [sacn, problem] of [
      [{ interface: 'eth0' }, /sacn\.interface/],
      [{ interface: '10.1.2.300' }, /sacn\.interface/],
      [{ port: 0 }, /sacn\.port must be at least 1/],
      [{ universe: 1 }, /sacn.*universe/],
    ] as const) {
      const r = await runBridge(['--config', configFile({ ...base, more: { sacn } }), '--check-config']);
      expect(r.code, JSON.stringify(sacn)).not.toBe(0);
      expect(r.stderr, JSON.stringify(sacn)).toMatch(problem);
    }
  });
});

describe('a crowd fixture as a look', () => {
  it('reads dimmer, colour, strobe and pattern by the fixture profile', () => {
    expect(lookFromDmx('left', [255, 255, 128, 0, 0, 0])).toEqual({ zone: 'left', color: '#ff8000', brightness: 1 });
    expect(lookFromDmx('left', [0, 0, 0, 0, 0, 0])).toEqual({ zone: 'left', off: true });
    expect(lookFromDmx('left', [])).toEqual({ zone: 'left', off: true });
    // dimmer at 0 with a colour: lit black, still in light mode
    expect(lookFromDmx('left', [0, 0, 0, 1, 0, 0])).toEqual({ zone: 'left', color: '#000001', brightness: 0 });
    expect(lookFromDmx('*', [51, 1, 2, 3])).toEqual({ zone: '*', color: '#010203', brightness: 0.2 });
    // strobe: below 10 none, 10 to 255 is 0.5 to 25 Hz
    expect(lookFromDmx('left', [255, 255, 255, 255, 9, 0]).pattern).toBeUndefined();
    expect(lookFromDmx('left', [255, 255, 255, 255, 10, 0]).pattern).toEqual({ type: 'strobe', hz: 0.5 });
    expect(lookFromDmx('left', [255, 255, 255, 255, 255, 0]).pattern).toEqual({ type: 'strobe', hz: 25 });
    // pattern: four wave bands of 60 from 10 by direction, speed 0.1 to 5 within each; a strobe outranks it
    const wave = (v: number) => lookFromDmx('left', [255, 255, 255, 255, 0, v]).pattern;
    expect(wave(9)).toBeUndefined();
    expect(wave(10)).toEqual({ type: 'wave', direction: 0, speed: 0.1 });
    expect(wave(69)).toEqual({ type: 'wave', direction: 0, speed: 5 });
    expect(wave(70)).toEqual({ type: 'wave', direction: 180, speed: 0.1 });
    expect(wave(130)).toEqual({ type: 'wave', direction: 90, speed: 0.1 });
    expect(wave(249)).toEqual({ type: 'wave', direction: 270, speed: 5 });
    expect(wave(250)).toBeUndefined();
    expect(lookFromDmx('left', [255, 255, 255, 255, 100, 100]).pattern?.type).toBe('strobe');
  });
});
