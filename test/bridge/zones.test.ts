// Zones end to end: a seeded crowd, each participant's token placed in a zone (or none) by
// POST /token, acting through two real gateway processes; the bridge sends each zone's value and n
// beside the whole crowd's, liblo's oscdump reads the wire, and every figure equals what is computed
// offline from the same actions; phones see the zones in their crowd frames. Rerun a failure with
// FUZZ_SEED=<seed>.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bridge } from '../../bridge/app.js';
import { createStores } from '../../gateway/store/stores.js';
import { startTestBridge } from '../helpers/bridge.js';
import { startOscdump, type Oscdump } from '../helpers/oscdump.js';
import { CROWD_LAYOUT, CROWD_MODES, CROWD_WINDOW_MS as WINDOW, offlineCrowd, participantRounds, type CrowdAction, type OfflineFigure } from '../helpers/crowd.js';
import { eventually, getLayout, postAction, postJson } from '../helpers/gateway.js';
import { spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { connectLive } from '../helpers/live.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';
import { fuzzSeed, seededRandom } from '../helpers/seeded-random.js';

const LAYOUT = 'zone-show';
const ZONES = ['left', 'right', 'balcony'];
const STROBE_CUE = { above: 0.6, below: 0.4, quorum: 1000, holdMs: 300 };
const redis = useRedis();
const seed = fuzzSeed();
let prefix: string;
let apiKey: string;
const gateways: GatewayProcess[] = [];
let bridge: Bridge;
let dump: Oscdump;

beforeAll(async () => {
  prefix = randomPrefix();
  const admin = new Redis(redis.get().server.url);
  const stores = createStores(admin, prefix);
  const team = await stores.teams.create('Zone team');
  // the Strobe fraction with a cue: its settings reach discovery and the phones' page frame
  const zoned = structuredClone({ ...CROWD_LAYOUT, layoutId: LAYOUT, zones: ZONES });
  zoned.pages[0]!.controls.find((c) => c.lid === 3)!.aggregate!.cue = STROBE_CUE;
  await stores.layouts.import(team.teamId, zoned);
  await stores.layouts.import(team.teamId, { ...CROWD_LAYOUT, layoutId: 'no-zones' });
  apiKey = (await stores.apiKeys.create(team.teamId, { name: 'zones' })).apiKey;
  admin.disconnect();
  for (let g = 0; g < 2; g++) gateways.push(await spawnGateway({ REDIS_URL: redis.get().server.url, REDIS_PREFIX: prefix }));
  dump = await startOscdump();
  const port = dump.port;
  await new Promise((r) => setTimeout(r, 300));
  ({ bridge } = await startTestBridge({ redisUrl: redis.get().server.url, prefix, layouts: [{ layoutId: LAYOUT, tickHz: 100, targets: [{ host: '127.0.0.1', port, booleans: 'int' }] }] }));
}, 60_000);
afterAll(async () => {
  await bridge?.stop();
  dump?.child.kill();
  for (const g of gateways) g.child.kill('SIGTERM');
});

const lastOnWire = (address: string) => dump.last(address);

const tolerance = (e: OfflineFigure) => (e.mode === 'median' || e.mode === 'trimmed-mean' ? 0.01 : 1e-5);
/** Where the wire differs from the offline figures, under `<address><suffix>` (suffix '' or /zone/<zone>). */
function wireMismatches(expected: Record<string, OfflineFigure>, suffix: string): string[] {
  const out: string[] = [];
  for (const [address, e] of Object.entries(expected)) {
    const wire = lastOnWire(`${address}${suffix}`);
    const n = lastOnWire(`${address}${suffix}/n`);
    if (!wire || !n) out.push(`${address}${suffix}: nothing on the wire`);
    else if (n.values[0] !== e.n) out.push(`${address}${suffix}/n: wire ${n.values[0]}, offline ${e.n}`);
    else if (e.value.some((v, k) => !(Math.abs(wire.values[k]! - v) <= tolerance(e)))) out.push(`${address}${suffix} ${e.mode}: wire ${wire.values.join(',')}, offline ${e.value.join(',')}`);
  }
  return out;
}

describe(`zones (seed ${seed})`, () => {
  it('refuses a zone the layout does not declare, and a zone on a layout without zones, with 400 zone_not_found', async () => {
    const stage = await postJson(`${gateways[0]!.url}/token`, { layoutId: LAYOUT, zone: 'stage' }, { 'x-api-key': apiKey });
    expect(stage.status).toBe(400);
    expect(stage.body.error.code).toBe('zone_not_found');
    expect(stage.body.error.message).toContain('left, right, balcony');
    const none = await postJson(`${gateways[0]!.url}/token`, { layoutId: 'no-zones', zone: 'left' }, { 'x-api-key': apiKey });
    expect([none.status, none.body.error.code]).toEqual([400, 'zone_not_found']);
    const discovery = await getLayout(gateways[0]!, LAYOUT, apiKey);
    expect(discovery.body.zones).toEqual(ZONES);
    expect(discovery.body.controls.find((c: { lid: number }) => c.lid === 3).aggregate.cue).toEqual(STROBE_CUE);
    expect((await getLayout(gateways[0]!, 'no-zones', apiKey)).body.zones).toBeUndefined();
  });

  it("sends each zone's value and n beside the whole crowd's, equal to the offline figures; an empty zone sends nothing; phones see the zones", async () => {
    const random = seededRandom(seed);
    const participants = 30 + Math.floor(random() * 90);
    const placed: { token: string; gateway: GatewayProcess; zone: string | null }[] = [];
    for (let p = 0; p < participants; p++) {
      const zone = [null, 'left', 'right'][Math.floor(random() * 3)]!; // nobody in the balcony
      const gateway = gateways[p % gateways.length]!;
      const r = await postJson(`${gateway.url}/token`, { layoutId: LAYOUT, ...(zone && { zone }) }, { 'x-api-key': apiKey });
      expect(r.status).toBe(200);
      placed.push({ token: r.body.token as string, gateway, zone });
    }
    const phone = await connectLive(gateways[1]!.url, placed[0]!.token);
    const page = phone.frames.find((f) => f.op === 'page') as unknown as { controls: { lid: number; aggregate?: { cue?: object } }[] };
    expect(page.controls.find((c) => c.lid === 3)!.aggregate!.cue).toEqual(STROBE_CUE);
    const actions: CrowdAction[] = [];
    for (const [p, { token, gateway }] of placed.entries()) {
      for (const round of participantRounds(random, p)) {
        actions.push(...round);
        const answers = await Promise.all(round.map((a) => postAction(gateway, token, { layoutId: LAYOUT, lid: a.lid, type: a.type, ...(a.value !== null && { value: a.value }) })));
        expect(answers.map((r) => r.status)).toEqual(round.map(() => 200));
      }
    }
    const inZone = (zone: string) => actions.filter((a) => placed[a.participant]!.zone === zone);
    const expected = { '': offlineCrowd(actions, CROWD_MODES, WINDOW, { 4: 3 }), left: offlineCrowd(inZone('left'), CROWD_MODES, WINDOW, { 4: 3 }), right: offlineCrowd(inZone('right'), CROWD_MODES, WINDOW, { 4: 3 }) };
    const mismatches = () => Object.entries(expected).flatMap(([zone, e]) => wireMismatches(e, zone ? `/zone/${zone}` : ''));
    await eventually(() => mismatches().length === 0, 10_000).catch(() => {});
    expect(mismatches()).toEqual([]);
    expect(lastOnWire('/002/zone/left')!.tags).toBe('f');
    expect(lastOnWire('/004/zone/right')!.tags).toBe('iii');
    expect(lastOnWire('/006/zone/left')!.tags).toBe('ff');
    expect(dump.saw('/zone/balcony')).toBe(false);

    // a phone's crowd frame for the Brightness slider (mean) carries the same zones
    const brightness = (f: { op: string; lid?: unknown }) => f.op === 'crowd' && f.lid === 2;
    const matches = () => {
      const f = phone.frames.filter(brightness).pop() as { n: number; zones?: Record<string, { value: number; n: number }> } | undefined;
      return !!f && f.n === expected['']['/002']!.n && ['left', 'right'].every((z) => f.zones?.[z]?.n === expected[z as 'left']['/002']!.n && Math.abs(f.zones[z].value - expected[z as 'left']['/002']!.value[0]!) < 1e-6); // a crowd frame carries what the displays get: 7 significant digits
    };
    await eventually(matches).catch(() => {});
    const frame = phone.frames.filter(brightness).pop() as { zones?: Record<string, unknown> };
    expect(matches(), JSON.stringify(frame)).toBe(true);
    expect(Object.keys(frame.zones ?? {}).sort()).toEqual(['left', 'right']);
    phone.ws.close();
  }, 60_000);
});
