// The crowd on the lighting rig, end to end with real processes: a real gateway takes the crowd's
// actions; a real bridge plays the layout's DMX targets, one sACN universe and one Art-Net universe,
// out of the test's own address; OLA's olad on a host of its own (the rig) receives both and is
// read back over its HTTP API, and a second olad plays the desk at priority 100 on the same sACN
// universe. What the bridge sends is also captured and decoded by Wireshark's tshark.
import { execFile, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LayoutDefinition } from '../../schemas/types.js';
import { configFile, runBridge, spawnBridge, stopProcess } from '../helpers/bridge.js';
import { agg, CROWD_LAYOUT } from '../helpers/crowd.js';
import { seedLayout, spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { audiencectlJson } from '../helpers/cli.js';
import { eventually, postJson } from '../helpers/gateway.js';
import { Hosts } from '../helpers/hosts.js';
import { sample, scrape } from '../helpers/metrics.js';
import { artnetOlaUniverse, startDesk, startRig, type Desk, type Rig } from '../helpers/ola.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';

/** universes of this run's own: another program's sACN on this machine is not this test's */
const CROWD_U = 1000 + Math.floor(Math.random() * 30_000);
const RELEASE_U = CROWD_U + 1;
/** Art-Net net 0, subnet 1, universe 2 */
const ARTNET = (0 << 8) | (1 << 4) | 2;
const STALE_MS = 1500;
const FADE_MS = 1000;
const RATE_HZ = 30;
const LAYOUT_ID = 'dmx-show';
const LAYOUT: LayoutDefinition = {
  ...CROWD_LAYOUT,
  layoutId: LAYOUT_ID,
  pages: CROWD_LAYOUT.pages.map((p) => ({
    ...p,
    controls: [
      ...p.controls.map((c) => (c.lid === 4 ? { ...c, aggregate: { ...agg('votes'), cue: { quorum: 5, share: 0.5, holdMs: 200 } } } : c)),
      { lid: 20, address: '/020', type: 'Toggle' as const, props: { label: 'Strobe' } },
      { lid: 21, address: '/021', type: 'Index' as const, props: { label: 'Gobo' }, options: [{ index: 0, label: 'Open' }, { index: 1, label: 'Stars' }] },
      { lid: 22, address: '/022', type: 'Button' as const, props: { label: 'Flash' } },
    ],
  })),
};
const redis = useRedis();
const prefix = randomPrefix();
const env = () => ({ REDIS_URL: redis.get().server.url, REDIS_PREFIX: prefix });
const hosts = new Hosts();
const children: ChildProcess[] = [];
let gateway: GatewayProcess;
let rig: Rig;
let desk: Desk | null = null;
let apiKey = '';
let bridgeOps = 0;
let bridgeOutput: () => string = () => '';
const capture = join(mkdtempSync(join(tmpdir(), 'ac-dmx-')), 'frames.pcap');
let tshark: ChildProcess | null = null;

/** The bridge's DMX targets: the crowd on universe CROWD_U (hold and fade), a released one, and Art-Net. */
function targets(iface: string) {
  return [
    {
      transport: 'sacn', universe: CROWD_U, interface: iface, rateHz: RATE_HZ, staleMs: STALE_MS,
      routes: [
        { lid: 2, crowd: true, channel: 1, bits: 16, slew: 100, stale: 'hold' }, // Brightness: 16-bit, slewed
        { lid: 13, crowd: true, channel: 3, stale: 'fade', fallback: 40, fadeMs: FADE_MS }, // Fog
        { lid: 4, crowd: true, channel: 10, values: { 0: 10, 1: 128, 2: 250 } }, // Colour vote
        { lid: 4, cue: true, channel: 11, value: 255, pulseMs: 500 }, // the vote's cue pulses
        { lid: 20, channel: 12, on: 200, off: 5 }, // plain actions: a Toggle,
        { lid: 21, channel: 13, values: { 0: 0, 1: 90 } }, // an Index,
        { lid: 22, channel: 14, value: 180, pulseMs: 300, rest: 20 }, // a Button that pulses
      ],
    },
    { transport: 'sacn', universe: RELEASE_U, interface: iface, rateHz: RATE_HZ, staleMs: STALE_MS, routes: [{ lid: 11, crowd: true, channel: 1, stale: 'release' }] },
    { transport: 'artnet', universe: { net: 0, subnet: 1, universe: 2 }, address: '', rateHz: RATE_HZ, routes: [{ lid: 10, crowd: true, channel: 5 }] },
  ];
}

beforeAll(async () => {
  hosts.start();
  const seeded = await seedLayout(redis.get().server.url, prefix, LAYOUT);
  apiKey = seeded.apiKey;
  seeded.admin.disconnect();
  gateway = await spawnGateway(env());
  children.push(gateway.child);
  const rigHost = hosts.add('rig', 2);
  rig = await startRig(hosts, rigHost, { sacn: [CROWD_U, RELEASE_U], artnet: [ARTNET] });
  const t = targets(hosts.self);
  (t[2] as { address: string }).address = rigHost.ip;
  tshark = execFile('tshark', ['-i', hosts.bridgeName, '-w', capture, '-f', 'udp port 5568 or udp port 6454']);
  const bridge = await spawnBridge(['--config', configFile({ redisUrl: redis.get().server.url, prefix, layouts: [{ layoutId: LAYOUT_ID, targets: t }] })]);
  children.push(bridge.child);
  bridgeOutput = bridge.output;
  bridgeOps = Number(/"opsPort":(\d+)/.exec(bridge.output())![1]);
  desk = await startDesk(hosts, hosts.add('desk', 3), CROWD_U, 100);
}, 90_000);
afterAll(async () => {
  tshark?.kill('SIGINT');
  hosts.remove();
  for (const c of children) await stopProcess(c, 'SIGKILL');
});

const tokens = new Map<number, string>();
async function act(participant: number, body: { lid: number; type: string; value?: unknown }): Promise<void> {
  let token = tokens.get(participant);
  if (!token) {
    token = (await postJson(`${gateway.url}/token`, { layoutId: LAYOUT_ID }, { 'x-api-key': apiKey })).body.token as string;
    tokens.set(participant, token);
  }
  const r = await postJson(`${gateway.url}/action`, { layoutId: LAYOUT_ID, ...body }, { authorization: `Bearer ${token}` });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
}
const everyone = (body: (i: number) => { lid: number; type: string; value?: unknown }) => Promise.all(Array.from({ length: 20 }, (_, i) => act(i, body(i))));
const pair = (dmx: number[], at: number) => ((dmx[at - 1] ?? 0) << 8) + (dmx[at] ?? 0);

/** One decoded frame of the capture. */
interface Frame {
  at: number;
  universe: number;
  sequence: number;
  priority?: number;
  terminated?: boolean;
  data: number[];
}

/**
 * The capture so far, decoded by tshark: each sACN frame by Wireshark's E1.31 dissector (its
 * universe, sequence, priority, options and channel levels), and each ArtDmx frame by its Art-Net
 * dissector (universe and sequence; the levels from the UDP payload after the 18-byte header).
 */
function frames(kind: 'sacn' | 'artnet'): Frame[] {
  const fields = kind === 'sacn' ? ['frame.time_epoch', 'acn.dmx.universe', 'acn.dmx.seq_number', 'acn.dmx.priority', 'acn.dmx.options', 'acn.dmx.data'] : ['frame.time_epoch', 'artnet.output.universe', 'artnet.output.sequence', 'udp.payload'];
  const prefs = ['-o', 'acn.dmx_enable:TRUE', '-o', 'acn.dmx_display_zeros:TRUE', '-o', 'acn.dmx_display_view:Decimal', '--enable-heuristic', 'acn'];
  const r = spawnSync('tshark', ['-r', capture, ...prefs, '-Y', kind === 'sacn' ? 'acn.dmx.universe' : 'artnet.output', '-T', 'fields', '-E', 'separator=\t', ...fields.flatMap((f) => ['-e', f])], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  // 2: the capture's last packet is still being written (tshark says it was cut short)
  if (r.status !== 0 && r.status !== 2) throw new Error(`tshark exited with ${r.status}: ${r.stderr}`);
  /** the dissector's level table: "001-020:   7   8 ... |  0 ..." rows after a header row */
  const levels = (table: string) => table.split(',').filter((row) => row.includes(':')).flatMap((row) => row.slice(row.indexOf(':') + 1).replace(/\|/g, ' ').trim().split(/\s+/).map(Number));
  const payload = (hex: string) => (hex.replace(/:/g, '').match(/[0-9a-f]{2}/gi) ?? []).slice(18).map((h) => parseInt(h, 16));
  return r.stdout.trim().split('\n').filter(Boolean).map((line) => {
    const c = line.split('\t');
    return kind === 'sacn'
      ? { at: Number(c[0]) * 1000, universe: Number(c[1]), sequence: Number(c[2]), priority: Number(c[3]), terminated: (Number(c[4]) & 0x40) !== 0, data: levels(c[5] ?? '') }
      : { at: Number(c[0]) * 1000, universe: Number(c[1]), sequence: Number(c[2]), data: payload(c[3] ?? '') };
  });
}

/** The frames captured up to now (the capture file is written behind the wire: its newest frames wait for this moment's to arrive). */
async function captured(kind: 'sacn' | 'artnet'): Promise<Frame[]> {
  const now = Date.now();
  let fs: Frame[] = [];
  await eventually(() => (fs = frames(kind)).some((f) => f.at >= now), 10_000);
  return fs;
}
const crowdFrames = async () => (await captured('sacn')).filter((f) => f.universe === CROWD_U);
const atChannel = (f: Frame, channel: number) => f.data[channel - 1] ?? 0;
const bridgeMetric = async (series: string) => sample(await scrape(bridgeOps), series);

describe('DMX out of the bridge, into olad', () => {
  it('a crowd Slider to a 16-bit channel pair: the scaled mean of 20 participants within one step', async () => {
    const values = Array.from({ length: 20 }, (_, i) => ((i * 37) % 100) / 100);
    await everyone((i) => ({ lid: 2, type: 'Slider', value: values[i] }));
    const want = Math.round((values.reduce((a, b) => a + b, 0) / values.length) * 65535);
    await eventually(async () => Math.abs(pair(await rig.dmx(CROWD_U), 1) - want) <= 1, 15_000);
  }, 30_000);

  it('slews at 100 units a second: from 0 to full takes 2.55 s within one frame, on the wire', async () => {
    await everyone(() => ({ lid: 2, type: 'Slider', value: 0 }));
    await eventually(async () => pair(await rig.dmx(CROWD_U), 1) === 0, 15_000);
    await new Promise((r) => setTimeout(r, 300));
    const from = Date.now();
    await everyone(() => ({ lid: 2, type: 'Slider', value: 1 }));
    await eventually(async () => pair(await rig.dmx(CROWD_U), 1) === 65535, 15_000);
    await new Promise((r) => setTimeout(r, 500));
    const seen = (await crowdFrames()).filter((f) => f.at >= from - 200);
    const top = seen.findIndex((f) => pair(f.data, 1) === 65535);
    const lastZero = seen.slice(0, top).findLastIndex((f) => pair(f.data, 1) === 0);
    expect(top, 'a frame at full').toBeGreaterThan(0);
    expect(lastZero, 'a frame at 0 before it').toBeGreaterThanOrEqual(0);
    const travel = seen[top]!.at - seen[lastZero]!.at;
    console.log(`figure: dmx_slew_0_to_full_ms = ${travel.toFixed(1)} ms (bound: 2550 ± ${(1000 / RATE_HZ).toFixed(1)}, slew 100 units/s, ${RATE_HZ} Hz)`);
    // within a frame: the first frame at full is the first after 2.55 s of travel on the bridge's
    // schedule; on the wire a frame may leave a little early or late (its send waits for the CPU)
    expect(travel).toBeGreaterThanOrEqual(2550 - 1000 / RATE_HZ);
    expect(travel).toBeLessThanOrEqual(2550 + 2 * (1000 / RATE_HZ));
    // on the way, no frame snapped: each moved up, by at most a quarter second of slew (the wire's
    // timestamps jitter around the bridge's own schedule, which sets each step, and a late frame
    // carries the travel of the time it waited)
    for (let i = lastZero + 1; i <= top; i++) {
      const step = pair(seen[i]!.data, 1) - pair(seen[i - 1]!.data, 1);
      expect(step).toBeGreaterThanOrEqual(0);
      expect(step).toBeLessThanOrEqual(Math.ceil(100 * 257 * 0.25));
    }
  }, 40_000);

  it('frames go out at 30 a second (within 5 %) while values change and while they do not, sequence numbers one by one', async () => {
    const count = (fs: Frame[], from: number, ms: number) => fs.filter((f) => f.at >= from && f.at < from + ms).length;
    const start = Date.now();
    await everyone(() => ({ lid: 2, type: 'Slider', value: 0 })); // 2.55 s of slewing
    await new Promise((r) => setTimeout(r, 5200)); // then quiet
    const all = await crowdFrames();
    const changing = count(all, start + 300, 2000);
    const quiet = count(all, start + 3000, 2000);
    const artnet = count(await captured('artnet'), start + 3000, 2000);
    console.log(`figure: dmx_frames_per_second = changing ${changing / 2}, quiet ${quiet / 2}, Art-Net ${artnet / 2} (bound: ${RATE_HZ} ± 5 %)`);
    for (const n of [changing, quiet, artnet]) expect(Math.abs(n / 2 - RATE_HZ)).toBeLessThanOrEqual(0.05 * RATE_HZ);
    const recent = all.filter((f) => f.at >= start);
    for (let i = 1; i < recent.length; i++) expect(recent[i]!.sequence).toBe((recent[i - 1]!.sequence + 1) % 256);
    expect(new Set(recent.map((f) => f.priority))).toEqual(new Set([50])); // below the desk's 100
  }, 30_000);

  it("a vote sets its leading option's value; its cue pulses a channel for 500 ms, once", async () => {
    const from = Date.now();
    await everyone((i) => ({ lid: 4, type: 'Index', value: i < 15 ? 1 : 2 }));
    await eventually(async () => (await rig.dmx(CROWD_U))[9] === 128, 15_000);
    await new Promise((r) => setTimeout(r, 1500));
    const seen = (await crowdFrames()).filter((f) => f.at >= from);
    const lit = seen.map((f) => atChannel(f, 11) === 255);
    expect(lit.filter((on, i) => on && !lit[i - 1]).length, 'the cue pulsed once').toBe(1);
    const first = lit.indexOf(true);
    const after = lit.indexOf(false, first);
    const held = seen[after]!.at - seen[first]!.at;
    console.log(`figure: dmx_cue_pulse_ms = ${held.toFixed(1)} ms (bound: 500 ± ${(1000 / RATE_HZ).toFixed(1)})`);
    // within a frame: the first frame off is the first after 500 ms on, on the bridge's schedule
    expect(Math.abs(held - 500)).toBeLessThanOrEqual(1000 / RATE_HZ + 1);
    expect(atChannel(seen.at(-1)!, 11)).toBe(0);
  }, 30_000);

  it("plain actions: a Toggle to its on and off values, an Index to its option's, a Button press pulses to value and back to rest", async () => {
    await act(0, { lid: 20, type: 'Toggle', value: true });
    await act(0, { lid: 21, type: 'Index', value: 1 });
    await eventually(async () => {
      const dmx = await rig.dmx(CROWD_U);
      return dmx[11] === 200 && dmx[12] === 90 && dmx[13] === 20;
    }, 15_000);
    const from = Date.now();
    await act(0, { lid: 22, type: 'Button' });
    await act(0, { lid: 20, type: 'Toggle', value: false });
    await eventually(async () => (await rig.dmx(CROWD_U))[11] === 5, 15_000);
    await new Promise((r) => setTimeout(r, 800));
    const seen = (await crowdFrames()).filter((f) => f.at >= from);
    expect(seen.some((f) => atChannel(f, 14) === 180)).toBe(true);
    expect(atChannel(seen.at(-1)!, 14)).toBe(20);
  }, 30_000);

  it('Art-Net: a crowd median to its channel, read back from olad and decoded by tshark', async () => {
    await everyone(() => ({ lid: 10, type: 'Slider', value: 0.5 }));
    let seen: number[] = [];
    await eventually(async () => (seen = await rig.dmx(artnetOlaUniverse(ARTNET)))[4] === 128, 15_000).catch(() => expect(seen.slice(0, 8), 'olad').toEqual([0, 0, 0, 0, 128, 0, 0, 0]));
    const decoded = await captured('artnet');
    expect([decoded.at(-1)!.universe, decoded.at(-1)!.data[4]]).toEqual([ARTNET, 128]);
    const seqs = decoded.slice(-40).map((f) => f.sequence);
    for (let i = 1; i < seqs.length; i++) expect(seqs[i]).toBe((seqs[i - 1]! % 255) + 1); // 1 to 255, never 0
  }, 30_000);

  it("the desk wins: a source at priority 100 on the same universe takes it from the crowd's 50 in olad's merge, and the crowd's values come back when the desk stops", async () => {
    const before = await rig.dmx(CROWD_U);
    expect(before[9], "the crowd's vote").toBe(128);
    const deskChannels = Array.from({ length: 20 }, (_, i) => (i === 15 ? 77 : 0)); // the desk's channel 16
    const feed = setInterval(() => desk!.send(deskChannels), 200);
    try {
      await eventually(async () => (await rig.dmx(CROWD_U))[15] === 77, 15_000);
      const dmx = await rig.dmx(CROWD_U);
      console.log(`figure: dmx_desk_merge = with the desk: channel 16 ${dmx[15]}, the crowd's channel 10 ${dmx[9]}`);
      expect(dmx[9], 'E1.31 merges by universe priority: the desk has the universe').toBe(0);
    } finally {
      clearInterval(feed);
    }
    // the desk stops: E1.31's source timeout (2.5 s), then the crowd's 50 is the highest
    await eventually(async () => (await rig.dmx(CROWD_U))[9] === 128, 15_000);
  }, 30_000);
});

describe('stale crowd input', () => {
  it('stop the gateway: within staleMs the hold route holds, the fade route fades to its fallback, the release universe stops (Stream_Terminated); a new gateway and the crowd resume', async () => {
    await everyone(() => ({ lid: 13, type: 'Slider', value: 1 })); // Fog: fades to 40 when stale
    await everyone(() => ({ lid: 11, type: 'Slider', value: 0.8 })); // Haze: its universe is released when stale
    await eventually(async () => (await rig.dmx(CROWD_U))[2] === 255 && (await rig.dmx(RELEASE_U))[0] === 204, 15_000);
    const held = pair(await rig.dmx(CROWD_U), 1);
    const staleBefore = await bridgeMetric(`audience_bridge_dmx_stale_total{layout="${LAYOUT_ID}",universe="sacn:${CROWD_U}"}`);
    const stoppedAt = Date.now();
    await stopProcess(gateway.child, 'SIGKILL');
    await new Promise((r) => setTimeout(r, STALE_MS + FADE_MS + 1500));
    const after = (await crowdFrames()).filter((f) => f.at >= stoppedAt);
    const last = after.at(-1)!;
    expect(pair(last.data, 1), 'hold').toBe(held);
    expect(atChannel(last, 3), 'fade: at its fallback').toBe(40);
    // the fade began within staleMs (and a summary's interval) of the loss, and took fadeMs
    const fadeStart = after.find((f) => atChannel(f, 3) < 255)!;
    const fadeEnd = after.find((f) => atChannel(f, 3) === 40)!;
    console.log(`figure: dmx_stale = fade began ${(fadeStart.at - stoppedAt).toFixed(0)} ms after the gateway stopped, took ${(fadeEnd.at - fadeStart.at).toFixed(0)} ms (bounds: ${STALE_MS} + 1000, ${FADE_MS})`);
    expect(fadeStart.at - stoppedAt).toBeLessThanOrEqual(STALE_MS + 1000);
    expect(Math.abs(fadeEnd.at - fadeStart.at - FADE_MS)).toBeLessThanOrEqual(2 * (1000 / RATE_HZ));
    const released = (await captured('sacn')).filter((f) => f.universe === RELEASE_U && f.at >= stoppedAt);
    expect(released.filter((f) => f.terminated)).toHaveLength(3);
    expect(released.at(-1)!.terminated, 'its last frames say Stream_Terminated, and none follow').toBe(true);
    expect(await bridgeMetric(`audience_bridge_dmx_stale_total{layout="${LAYOUT_ID}",universe="sacn:${CROWD_U}"}`)).toBeGreaterThan(staleBefore);
    // a universe is up while its frames go out: the held and faded one is, the released one is not
    const up = (u: number) => bridgeMetric(`audience_bridge_target_up{layout="${LAYOUT_ID}",target="sacn:${u}"}`);
    expect([await up(CROWD_U), await up(RELEASE_U)]).toEqual([1, 0]);
    // a gateway again: the crowd acts and its values come back, the released universe is sent again
    gateway = await spawnGateway(env());
    children.push(gateway.child);
    await everyone(() => ({ lid: 13, type: 'Slider', value: 0.6 }));
    await everyone(() => ({ lid: 11, type: 'Slider', value: 0.2 }));
    await eventually(async () => (await rig.dmx(CROWD_U))[2] === 153 && (await rig.dmx(RELEASE_U))[0] === 51, 15_000);
    expect((await captured('sacn')).filter((f) => f.universe === RELEASE_U).at(-1)!.terminated).toBe(false);
    expect(await up(RELEASE_U)).toBe(1);
    // the show ends (End of show): its participants leave the crowd at once, though their values
    // would count for another minute, and the routes go stale as when the gateway stopped
    await audiencectlJson(env(), 'token', 'revoke', '--layout', LAYOUT_ID);
    const endedAt = Date.now();
    await eventually(async () => (await rig.dmx(CROWD_U))[2] === 40 && (await up(RELEASE_U)) === 0, 15_000);
    console.log(`figure: dmx_show_ended = the fade route at its fallback and the release universe down ${Date.now() - endedAt} ms after audiencectl ended the show (bound: ${STALE_MS} + ${FADE_MS} + 1000)`);
    expect(Date.now() - endedAt).toBeLessThanOrEqual(STALE_MS + FADE_MS + 1000);
    tokens.clear(); // those tokens are revoked: the next actions mint anew
  }, 60_000);

  it('a bridge that stops sends each route its fallback, then ends its sources with Stream_Terminated', async () => {
    const stoppedAt = Date.now();
    await stopProcess(children[1]!, 'SIGTERM');
    // the capture file is written behind the wire (SIGINT to tshark once ended it before the frames
    // of the bridge's last 110 ms were in it): wait for the source's end to be written, then end it
    const ended = () => frames('sacn').filter((f) => f.universe === CROWD_U && f.at >= stoppedAt && f.terminated).length >= 3;
    await eventually(ended, 10_000).catch(() => {}); // judged below, on what the capture holds
    if (tshark) await stopProcess(tshark, 'SIGINT');
    const after = frames('sacn').filter((f) => f.universe === CROWD_U && f.at >= stoppedAt);
    const terminated = after.filter((f) => f.terminated);
    expect(terminated).toHaveLength(3);
    const fallback = after[after.length - 4]!;
    expect([pair(fallback.data, 1), atChannel(fallback, 3), atChannel(fallback, 10)]).toEqual([0, 40, 0]);
    expect(bridgeOutput()).not.toMatch(/"level":(50|60)/);
  }, 30_000);
});

describe("the bridge's DMX targets are checked", () => {
  const check = (targets: object[]) => runBridge(['--config', configFile({ redisUrl: 'redis://127.0.0.1:1', prefix: 'x:', layouts: [{ layoutId: 'show', targets }] }), '--check-config']);
  it('at start and by --check-config: overlapping channels name both routes; a 16-bit route on 512, a value past 255, an OSC key on a DMX target are refused', async () => {
    const valid = targets('10.0.0.1');
    (valid[2] as { address: string }).address = '10.0.0.2';
    const ok = await check(valid);
    expect(ok.code, ok.stderr + ok.stdout).toBe(0);
    const overlap = await check([{ transport: 'sacn', universe: 7, routes: [{ lid: 2, crowd: true, channel: 1, bits: 16 }, { lid: 3, channel: 2 }] }]);
    expect(overlap.code).not.toBe(0);
    expect(overlap.stderr + overlap.stdout).toMatch(/route 2 \(lid 3, channel 2\) overlaps route 1 \(lid 2, channel 1-2\) on channel 2/);
    for (const [routes, says] of [
      [[{ lid: 2, channel: 512, bits: 16 }], /512 is the last/],
      [[{ lid: 2, channel: 5, value: 300 }], /value 300 is past 255/],
    ] as const) {
      const r = await check([{ transport: 'sacn', universe: 7, routes }]);
      expect([r.code === 0, r.stderr + r.stdout]).toEqual([false, expect.stringMatching(says)]);
    }
    const osc = await check([{ transport: 'artnet', universe: 3, host: 'a', port: 1 }]);
    expect(osc.stderr + osc.stdout).toMatch(/"host" is for OSC targets/);
    const zero = await check([{ transport: 'sacn', universe: 0 }]);
    expect(zero.stderr + zero.stdout).toMatch(/sACN universe is 1 to 63999/);
    const twice = await runBridge(['--config', configFile({ redisUrl: 'redis://127.0.0.1:1', prefix: 'x:', layouts: [{ layoutId: 'a', targets: [{ transport: 'sacn', universe: 9 }] }, { layoutId: 'b', targets: [{ transport: 'sacn', universe: 9 }] }] }), '--check-config']);
    expect(twice.stderr + twice.stdout).toMatch(/the same universe is also a target of layout a/);
  }, 30_000);
});
