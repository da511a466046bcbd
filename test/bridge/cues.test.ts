// Crowd cues end to end: votes and toggles sent through a real gateway process; two bridges on the
// layout (one a real process that is restarted, one in this process for its metrics), each sending
// to its own liblo oscdump (an independent OSC decoder); the cues as the wire shows them.
import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bridge } from '../../bridge/app.js';
import { createStores } from '../../gateway/store/stores.js';
import type { LayoutDefinition } from '../../schemas/types.js';
import { configFile, spawnBridge, startTestBridge, stopProcess } from '../helpers/bridge.js';
import { audiencectl } from '../helpers/cli.js';
import { startOscdump, type Oscdump } from '../helpers/oscdump.js';
import { eventually, mintToken, postAction } from '../helpers/gateway.js';
import { spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';

const LAYOUT = 'cue-show';
const WINDOW = 60_000;
/**
 * The threshold cue's hold: ten times the 150 ms its test keeps the fraction out of the band, so a
 * loaded machine that delays the action ending an excursion cannot make it count as held (with a
 * 300 ms hold, a CI run beside a busy core fired the cue on one of them).
 */
const FRACTION_HOLD_MS = 1500;
const CUE_LAYOUT: LayoutDefinition = {
  layoutId: LAYOUT,
  name: 'Cue show',
  activePageId: 'main',
  pages: [
    {
      pageId: 'main',
      name: 'Main',
      controls: [
        { lid: 3, address: '/003', type: 'Toggle', props: { label: 'Strobe' }, aggregate: { mode: 'fraction', windowMs: WINDOW, cue: { above: 0.6, below: 0.4, quorum: 5, holdMs: FRACTION_HOLD_MS } } },
        {
          lid: 4,
          address: '/004',
          type: 'Index',
          props: { label: 'Colour' },
          options: [{ index: 0, label: 'Red' }, { index: 1, label: 'Green' }, { index: 2, label: 'Blue' }],
          aggregate: { mode: 'votes', windowMs: WINDOW, cue: { quorum: 5, share: 0.6, holdMs: 300 } },
        },
      ],
    },
    { pageId: 'encore', name: 'Encore', controls: [{ lid: 7, address: '/007', type: 'Button', props: { label: 'More' } }] },
  ],
};

const redis = useRedis();
let prefix: string;
let apiKey: string;
let gateway: GatewayProcess;
let bridgeB: Bridge;
let bridgeA: ChildProcess;
let configA: string;
const env = () => ({ REDIS_URL: redis.get().server.url, REDIS_PREFIX: prefix });

const dumps: Oscdump[] = [];

/** The values a dump received at `<address>/cue`, in order. */
const cues = (d: Oscdump, address: string) => d.lines.filter((l) => l.address === `${address}/cue`).map((l) => l.values[0]);
const cueTimes = (d: Oscdump, address: string) => d.lines.filter((l) => l.address === `${address}/cue`).map((l) => l.at);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let dumpA: Oscdump;
let dumpB: Oscdump;

const bridgeLayout = (d: Oscdump) => ({ layoutId: LAYOUT, tickHz: 100, targets: [{ host: '127.0.0.1', port: d.port, booleans: 'int' }] });
async function startBridgeA(): Promise<void> {
  ({ child: bridgeA } = await spawnBridge(['--config', configA]));
}

beforeAll(async () => {
  prefix = randomPrefix();
  const admin = new Redis(redis.get().server.url);
  const stores = createStores(admin, prefix);
  const team = await stores.teams.create('Cue team');
  await stores.layouts.import(team.teamId, CUE_LAYOUT);
  apiKey = (await stores.apiKeys.create(team.teamId, { name: 'cues' })).apiKey;
  admin.disconnect();
  gateway = await spawnGateway({ REDIS_URL: redis.get().server.url, REDIS_PREFIX: prefix });
  dumpA = await startOscdump();
  dumpB = await startOscdump();
  dumps.push(dumpA, dumpB);
  await sleep(300);
  configA = configFile({ redisUrl: redis.get().server.url, prefix, bridgeId: 'bridge-a', layouts: [bridgeLayout(dumpA)] });
  await startBridgeA();
  ({ bridge: bridgeB } = await startTestBridge({ redisUrl: redis.get().server.url, prefix, bridgeId: 'bridge-b', layouts: [bridgeLayout(dumpB)] }));
}, 60_000);
afterAll(async () => {
  await bridgeB?.stop();
  if (bridgeA) await stopProcess(bridgeA);
  for (const d of dumps) d.child.kill();
  gateway?.child.kill('SIGTERM');
});

async function voters(count: number): Promise<string[]> {
  return Promise.all(Array.from({ length: count }, () => mintToken(gateway, LAYOUT, apiKey)));
}
async function send(token: string, lid: number, type: string, value: unknown): Promise<void> {
  const r = await postAction(gateway, token, { layoutId: LAYOUT, lid, type, value });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
}

describe('a vote cue', () => {
  let tokens: string[];

  it('fires nothing below its quorum, then the winning index once on both bridges; more votes fire nothing', async () => {
    tokens = await voters(8);
    for (const t of tokens.slice(0, 4)) await send(t, 4, 'Index', 1);
    await sleep(1200); // 4 voters, 100 % for Green: below the quorum of 5
    expect(cues(dumpA, '/004')).toEqual([]);
    expect(cues(dumpB, '/004')).toEqual([]);
    await send(tokens[4]!, 4, 'Index', 2); // 5 voters, 80 % for Green
    await eventually(() => cues(dumpA, '/004').length > 0 && cues(dumpB, '/004').length > 0);
    for (const t of tokens.slice(5)) await send(t, 4, 'Index', 1);
    await sleep(1200);
    expect(cues(dumpA, '/004')).toEqual([1]);
    expect(cues(dumpB, '/004')).toEqual([1]);
    // how close in time two bridges fire one cue (each sends when it decides or reads the other's record)
    const apart = Math.abs(cueTimes(dumpA, '/004')[0]! - cueTimes(dumpB, '/004')[0]!);
    process.stdout.write(`two bridges sent the vote cue ${apart} ms apart\n`);
    expect(apart).toBeLessThan(1000);
    expect(bridgeB.cues[0]!.phases()).toContainEqual({ lid: 4, phase: 'fired', output: 1 });
  }, 30_000);

  it('fires again once re-armed with audiencectl crowd rearm, on both bridges', async () => {
    const r = await audiencectl(env(), 'crowd', 'rearm', LAYOUT, '4');
    expect(r.code, r.stderr).toBe(0);
    await eventually(() => cues(dumpA, '/004').length === 2 && cues(dumpB, '/004').length === 2);
    await sleep(1000);
    expect(cues(dumpA, '/004')).toEqual([1, 1]);
    expect(cues(dumpB, '/004')).toEqual([1, 1]);
    const shown = await audiencectl(env(), 'crowd', 'cues', LAYOUT, '--json');
    expect(shown.json.cues.find((c: { lid: number }) => c.lid === 4)).toMatchObject({ phase: 'fired', value: 1 });
    expect((await audiencectl(env(), 'crowd', 'rearm', LAYOUT, '9', '--json')).json.error.code).toBe('cue_not_found');
  }, 30_000);

  it('is not fired again by a bridge restarted after it', async () => {
    await stopProcess(bridgeA);
    const restarted = Date.now();
    await startBridgeA();
    // the restarted bridge has the vote again (it sends the crowd value once merged), and had time to decide
    await eventually(() => dumpA.lines.some((l) => l.address === '/004' && l.at > restarted));
    await sleep(1000);
    expect(cues(dumpA, '/004')).toEqual([1, 1]);
  }, 30_000);

  it('is re-armed by a page switch, and fires only while its control is on the live page', async () => {
    expect((await audiencectl(env(), 'layout', 'activate', LAYOUT, 'encore')).code).toBe(0);
    await sleep(1500); // re-armed, but lid 4 is not on the live page
    expect(cues(dumpA, '/004')).toEqual([1, 1]);
    expect((await audiencectl(env(), 'layout', 'activate', LAYOUT, 'main')).code).toBe(0);
    await eventually(() => cues(dumpA, '/004').length === 3 && cues(dumpB, '/004').length === 3); // the votes are still in their window
    await sleep(800);
    expect(cues(dumpA, '/004')).toEqual([1, 1, 1]);
    expect(cues(dumpB, '/004')).toEqual([1, 1, 1]);
  }, 30_000);
});

describe('a threshold cue', () => {
  it('fires nothing while the fraction hovers in its band, then 1 above and 0 below, once each', async () => {
    const tokens = await voters(10);
    const set = (on: number) => Promise.all(tokens.map((t, i) => send(t, 3, 'Toggle', i < on)));
    await set(5); // 0.5: inside the band
    for (let k = 0; k < 8; k++) {
      await set(k % 2 === 0 ? 4 : 6); // 0.4 and 0.6 for far less than FRACTION_HOLD_MS, 0.5 between
      await sleep(150);
      await set(5);
      await sleep(100);
    }
    await sleep(500);
    expect(cues(dumpA, '/003')).toEqual([]);
    await set(7);
    await eventually(() => cues(dumpA, '/003').length === 1);
    for (let k = 0; k < 6; k++) {
      await set(k % 2 === 0 ? 5 : 4); // back into the band and down to its edge for less than holdMs
      await sleep(150);
      await set(6);
      await sleep(150);
    }
    await sleep(500);
    expect(cues(dumpA, '/003')).toEqual([1]);
    await set(3);
    await eventually(() => cues(dumpA, '/003').length === 2 && cues(dumpB, '/003').length === 2);
    await sleep(800); // and nothing more
    expect(cues(dumpA, '/003')).toEqual([1, 0]);
    expect(cues(dumpB, '/003')).toEqual([1, 0]);
  }, 60_000);
});

describe('the crowd as Prometheus gauges', () => {
  it("shows each aggregated control's value, n and cue phase, labelled by layout and lid", async () => {
    const text = await (await fetch(`http://127.0.0.1:${bridgeB.opsPort}/metrics`)).text();
    expect(text).toContain(`audience_bridge_crowd_value{layout="${LAYOUT}",lid="4"} 1`); // Green leads
    expect(text).toMatch(new RegExp(`audience_bridge_crowd_leading_share\\{layout="${LAYOUT}",lid="4"\\} 0\\.87`)); // 7 of 8
    expect(text).toContain(`audience_bridge_crowd_participants{layout="${LAYOUT}",lid="4"} 8`);
    expect(text).toContain(`audience_bridge_crowd_value{layout="${LAYOUT}",lid="3"} 0.3`);
    expect(text).toContain(`audience_bridge_crowd_participants{layout="${LAYOUT}",lid="3"} 10`);
    expect(text).toContain(`audience_bridge_crowd_cue_phase{layout="${LAYOUT}",lid="4"} 2`);
    expect(text).toContain(`audience_bridge_crowd_cue_output{layout="${LAYOUT}",lid="3"} 0`);
    expect(text).toContain(`audience_bridge_crowd_cues_sent_total{layout="${LAYOUT}",lid="4"} 3`);
  });
});
