// Crowd aggregation end to end: seeded random crowds send actions through three real gateway
// processes (and, for crowds of up to 10,000, straight into three gateway folds); the bridge merges
// their summaries; liblo's oscdump (an independent OSC decoder) reads the wire; every crowd value
// and its n equal what is computed offline from the same actions. Rerun a failure with FUZZ_SEED=<seed>.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bridge } from '../../bridge/app.js';
import { ActionLog } from '../../gateway/actions/action-log.js';
import { CrowdFold, type AggregatedControl } from '../../gateway/crowd/crowd-fold.js';
import { RedisKeys } from '../../gateway/store/keys.js';
import { createStores } from '../../gateway/store/stores.js';
import { actionStreamKey } from '../../schemas/redis-keys.js';
import { startTestBridge } from '../helpers/bridge.js';
import { startOscdump, type Oscdump } from '../helpers/oscdump.js';
import { eventually, mintToken, postAction } from '../helpers/gateway.js';
import { spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';
import { fuzzSeed, seededRandom } from '../helpers/seeded-random.js';
import { CROWD_LAYOUT, CROWD_MODES, CROWD_WINDOW_MS as WINDOW, LAYOUT, agg, offlineCrowd, participantRounds, type CrowdAction, type OfflineFigure } from '../helpers/crowd.js';

const redis = useRedis();
const seed = fuzzSeed();
let prefix: string;
let apiKey: string;
const gateways: GatewayProcess[] = [];
let bridge: Bridge;
/** Layouts whose streams only the in-process folds write: one per crowd size, each with its own oscdump. */
const BIG = ['crowd-big-0', 'crowd-big-1', 'crowd-big-2'];
const dumps: (Oscdump & { layoutId: string })[] = [];
beforeAll(async () => {
  prefix = randomPrefix();
  const admin = new Redis(redis.get().server.url);
  const stores = createStores(admin, prefix);
  const team = await stores.teams.create('Crowd team');
  await stores.layouts.import(team.teamId, CROWD_LAYOUT);
  apiKey = (await stores.apiKeys.create(team.teamId, { name: 'crowd' })).apiKey;
  admin.disconnect();
  // the third folds every 100 ms (CROWD_FOLD_MS), the others every 10 ms (the default)
  for (let g = 0; g < 3; g++) gateways.push(await spawnGateway({ REDIS_URL: redis.get().server.url, REDIS_PREFIX: prefix, ...(g === 2 && { CROWD_FOLD_MS: '100' }) }));
  for (const layoutId of [LAYOUT, ...BIG]) dumps.push({ ...(await startOscdump()), layoutId });
  await new Promise((r) => setTimeout(r, 300));
  ({ bridge } = await startTestBridge({ redisUrl: redis.get().server.url, prefix, layouts: dumps.map((d) => ({ layoutId: d.layoutId, tickHz: 100, targets: [{ host: '127.0.0.1', port: d.port, booleans: 'int' }] })) }));
}, 60_000);
afterAll(async () => {
  await bridge?.stop();
  for (const d of dumps) d.child.kill();
  for (const g of gateways) g.child.kill('SIGTERM');
});

/** The last line a layout's oscdump printed for an address: its type tags and values. */
function lastOnWire(address: string, layoutId = LAYOUT): { tags: string; values: number[] } | null {
  return dumps.find((d) => d.layoutId === layoutId)!.last(address);
}

/** Waits until the wire shows the offline figures (or 10 s pass), then asserts each, saying what differs. */
async function expectOnWire(expected: Record<string, OfflineFigure>, layoutId = LAYOUT): Promise<void> {
  const tolerance = (e: OfflineFigure) => (e.mode === 'median' || e.mode === 'trimmed-mean' ? 0.01 : 1e-5);
  const close = (address: string, e: OfflineFigure) => {
    const wire = lastOnWire(address, layoutId);
    const sd = lastOnWire(`${address}/sd`, layoutId);
    const sdClose = e.sd === undefined || (sd !== null && Math.abs(sd.values[0]! - e.sd) <= 1e-5);
    // the sd too: a value within the median's tolerance can still be an earlier bundle's
    return lastOnWire(`${address}/n`, layoutId)?.values[0] === e.n && wire !== null && sdClose && e.value.every((v, k) => Math.abs(wire.values[k]! - v) <= tolerance(e));
  };
  await eventually(() => Object.entries(expected).every(([address, e]) => close(address, e)), 10_000).catch(() => {}); // the assertions below say what differs
  for (const [address, e] of Object.entries(expected)) {
    const wire = lastOnWire(address, layoutId);
    expect(wire, `${address} ${e.mode} on the wire`).not.toBeNull();
    expect(wire!.tags, `${address} ${e.mode}`).toBe(e.mode === 'votes' ? 'iii' : e.mode === 'centroid' ? 'ff' : 'f');
    expect(wire!.values.length).toBe(e.value.length);
    e.value.forEach((v, k) => expect(Math.abs(wire!.values[k]! - v), `${address} ${e.mode} [${k}]: wire ${wire!.values[k]}, offline ${v}`).toBeLessThanOrEqual(tolerance(e)));
    expect(lastOnWire(`${address}/n`, layoutId), `${address}/n`).toEqual({ tags: 'i', values: [e.n] });
    if (e.sd !== undefined) expect(Math.abs(lastOnWire(`${address}/sd`, layoutId)!.values[0]! - e.sd), `${address} sd`).toBeLessThanOrEqual(1e-5);
    else expect(lastOnWire(`${address}/sd`, layoutId)).toBeNull();
  }
}

describe(`crowd aggregation on the wire (seed ${seed})`, () => {
  it('sends mean, median, trimmed mean, fraction, votes, centroid and rate with n (and sd for sliders), equal to the offline figures', async () => {
    const random = seededRandom(seed);
    const participants = 1 + Math.floor(random() * 120);
    const tokens: { token: string; gateway: GatewayProcess }[] = [];
    for (let p = 0; p < participants; p++) {
      const gateway = gateways[p % gateways.length]!;
      tokens.push({ token: await mintToken(gateway, LAYOUT, apiKey), gateway });
    }
    const actions: CrowdAction[] = [];
    for (const [p, { token, gateway }] of tokens.entries()) {
      for (const round of participantRounds(random, p)) {
        actions.push(...round);
        const answers = await Promise.all(round.map((a) => postAction(gateway, token, { layoutId: LAYOUT, lid: a.lid, type: a.type, ...(a.value !== null && { value: a.value }) })));
        expect(answers.map((r) => r.status)).toEqual(round.map(() => 200)); // a round at a time: the last one is the latest value
      }
    }
    await expectOnWire(offlineCrowd(actions, CROWD_MODES, WINDOW, { 4: 3 }));
  }, 60_000);

  const random = seededRandom(seed + 1);
  it.each([1, 10_000, 2 + Math.floor(random() * 5_000)].map((size, i) => [size, BIG[i]!] as const))(
    'sends the figures of a crowd of %i folded by three gateway folds, as the wire shows them',
    async (participants, layoutId) => {
      const keys = new RedisKeys(prefix);
      const client = new Redis(redis.get().server.url);
      const folds = [0, 1, 2].map((g) => new CrowdFold(new ActionLog(client, keys, { maxLen: 1_000_000, retentionMs: 600_000 }), `gw-${layoutId}-${g}`, 10));
      const controls = new Map(CROWD_LAYOUT.pages[0]!.controls.map((c) => [c.lid, c as AggregatedControl]));
      try {
        const actions: CrowdAction[] = [];
        const pending: Promise<void>[] = [];
        for (let p = 0; p < participants; p++) {
          for (const round of participantRounds(random, p)) {
            actions.push(...round);
            for (const a of round) pending.push(folds[p % 3]!.add(layoutId, controls.get(a.lid)!, `sub-${p}`, a.value as never, Date.now()));
          }
        }
        await Promise.all(pending);
        await expectOnWire(offlineCrowd(actions, CROWD_MODES, WINDOW, { 4: 3 }), layoutId);
      } finally {
        for (const f of folds) f.stop();
        client.disconnect();
      }
    },
    60_000,
  );

  it('appends summaries, never one entry per action, and answers 200 only once the summary is stored', async () => {
    const stream = actionStreamKey(prefix, LAYOUT);
    const client = new Redis(redis.get().server.url);
    try {
      const tokens = await Promise.all(Array.from({ length: 50 }, () => mintToken(gateways[0]!, LAYOUT, apiKey)));
      const token = tokens[0]!;
      const before = await client.xlen(stream);
      const answers = await Promise.all(tokens.map((tk, k) => postAction(gateways[0]!, tk, { layoutId: LAYOUT, lid: 13, type: 'Slider', value: k / 50 })));
      expect(answers.map((a) => a.status)).toEqual(new Array(50).fill(200));
      // the other controls' lease refreshes (every second while they hold participants) land in between: leave them out
      const added = (await client.xrange(stream, '-', '+'))
        .slice(before)
        .map(([, f]) => JSON.parse(f[1]!) as { v: number; kind?: string; lid: number; n: number; sum: number })
        .filter((e) => e.lid === 13);
      // every answer came after a summary holding its action was stored: the newest already counts all 50
      expect(added.every((e) => e.v === 2 && e.kind === 'summary')).toBe(true);
      expect(added.length).toBeLessThan(50);
      expect(added[added.length - 1]!.n).toBe(50);
      expect(added[added.length - 1]!.sum).toBeCloseTo(49 / 2, 10);
      // a plain control on the same layout still appends one action entry per request
      expect((await postAction(gateways[0]!, token, { layoutId: LAYOUT, lid: 12, type: 'Slider', value: 0.5 })).status).toBe(200);
      const newest = (await client.xrevrange(stream, '+', '-', 'COUNT', 20)).map(([, f]) => JSON.parse(f[1]!) as { v: number; lid: number }).filter((e) => e.lid === 12);
      expect(newest[0]).toMatchObject({ v: 1, lid: 12, value: 0.5 });
    } finally {
      client.disconnect();
    }
  });

  it('folds at the configured tick: CROWD_FOLD_MS=100 writes one summary per 100 ms however often actions come', async () => {
    const stream = actionStreamKey(prefix, LAYOUT);
    const client = new Redis(redis.get().server.url);
    try {
      const token = await mintToken(gateways[2]!, LAYOUT, apiKey);
      const from = (await client.xrevrange(stream, '+', '-', 'COUNT', 1))[0]![0];
      const started = Date.now();
      const answers: Promise<unknown>[] = [];
      for (let k = 0; k < 40; k++) {
        answers.push(postAction(gateways[2]!, token, { layoutId: LAYOUT, lid: 13, type: 'Slider', value: k / 40 }));
        await new Promise((r) => setTimeout(r, 10));
      }
      await Promise.all(answers);
      const elapsed = Date.now() - started;
      // this control's summaries only: the stream also holds every control's lease refreshes
      const summaries = (await client.xrange(stream, `(${from}`, '+')).map(([, f]) => JSON.parse(f[1]!) as { ts: number; lid: number }).filter((x) => x.lid === 13);
      expect(summaries.length).toBeGreaterThanOrEqual(2);
      expect(summaries.length).toBeLessThanOrEqual(Math.ceil(elapsed / 100) + 1); // at 10 ms it would be about 40
      // a tick the event loop ran late brings the next one closer (65 ms apart once, under the full
      // suite): the ticks keep their period on average, where a summary per action would be 10 ms apart
      const spacing = (summaries.at(-1)!.ts - summaries[0]!.ts) / (summaries.length - 1);
      expect(spacing, JSON.stringify(summaries.map((x) => x.ts))).toBeGreaterThanOrEqual(90);
    } finally {
      client.disconnect();
    }
  });

  it('refuses what does not fit an aggregated control as for any control, and checks an Idempotency-Key only for its form', async () => {
    const token = await mintToken(gateways[2]!, LAYOUT, apiKey);
    const send = (body: object, headers: Record<string, string> = {}) => postAction(gateways[2]!, token, { layoutId: LAYOUT, ...body }, headers);
    const codes = async (body: object, headers?: Record<string, string>): Promise<[number, string | null]> => {
      const r = await send(body, headers);
      return [r.status, (r.body as { error?: { code: string } }).error?.code ?? null];
    };
    expect(await codes({ lid: 4, type: 'Index', value: 3 })).toEqual([400, 'invalid_value']);
    expect(await codes({ lid: 2, type: 'Slider', value: 1.5 })).toEqual([400, 'invalid_value']);
    expect(await codes({ lid: 2, type: 'Toggle', value: true })).toEqual([400, 'type_mismatch']);
    expect(await codes({ lid: 6, type: 'XYPad', value: [0.5] })).toEqual([400, 'invalid_value']);
    expect(await codes({ lid: 3, type: 'Toggle', value: true }, { 'idempotency-key': 'has space' })).toEqual([400, 'idempotency_key_invalid']);
    expect(await codes({ lid: 3, type: 'Toggle', value: true }, { 'idempotency-key': 'k-1' })).toEqual([200, null]);
    expect(await codes({ lid: 3, type: 'Toggle', value: true }, { 'idempotency-key': 'k-1' })).toEqual([200, null]);
  });

  it('discovery carries each control’s aggregate, so an app can say "your vote counts"', async () => {
    const r = await fetch(`${gateways[1]!.url}/layout/${LAYOUT}`, { headers: { 'x-api-key': apiKey } });
    const body = (await r.json()) as { controls: { lid: number; aggregate?: object }[] };
    expect(Object.fromEntries(body.controls.map((c) => [c.lid, c.aggregate ?? null]))).toEqual({
      1: agg('rate'), 2: agg('mean'), 3: agg('fraction'), 4: agg('votes'), 6: agg('centroid'), 10: agg('median'), 11: agg('trimmed-mean'), 12: null, 13: agg('mean'),
    });
  });
});
