// A revoked participant leaves the crowd at once, on every gateway process that counts it: the end of
// a show (`audiencectl token revoke --layout`, the team page's "End of show"), a cut-off in the past
// (`--before`) and one participant (`--sub`). Revoked tokens are refused from the revocation message
// on; without this, what they sent before stayed counted for the rest of its window (a vote's
// 60 s), and a DMX route on the crowd never went stale when the show ended. Two real gateway
// processes on one Redis, a real bridge, liblo's oscdump as the display.
import { decodeJwt } from 'jose';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bridge } from '../../bridge/app.js';
import type { LayoutDefinition } from '../../schemas/types.js';
import { startTestBridge } from '../helpers/bridge.js';
import { audiencectlJson } from '../helpers/cli.js';
import { CROWD_LAYOUT } from '../helpers/crowd.js';
import { eventually, postJson } from '../helpers/gateway.js';
import { postOnNewConnection, seedLayout, spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { startOscdump, type Oscdump } from '../helpers/oscdump.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';

const redis = useRedis();
const CASES = ['end', 'before', 'sub', 'missed'] as const;
const layoutOf = (c: string) => `revoked-${c}`;

let env: { REDIS_URL: string; REDIS_PREFIX: string };
let apiKey: string;
let bridge: Bridge;
const dumps = new Map<string, Oscdump>();
const processes: GatewayProcess[] = [];

beforeAll(async () => {
  const prefix = randomPrefix();
  env = { REDIS_URL: redis.get().server.url, REDIS_PREFIX: prefix };
  const layouts: LayoutDefinition[] = CASES.map((c) => ({ ...CROWD_LAYOUT, layoutId: layoutOf(c) }));
  const seeded = await seedLayout(env.REDIS_URL, prefix, layouts[0]!, ...layouts.slice(1));
  apiKey = seeded.apiKey;
  seeded.admin.disconnect();
  for (const l of layouts) dumps.set(l.layoutId, await startOscdump());
  ({ bridge } = await startTestBridge({
    redisUrl: env.REDIS_URL,
    prefix,
    layouts: layouts.map((l) => ({ layoutId: l.layoutId, tickHz: 100, targets: [{ host: '127.0.0.1', port: dumps.get(l.layoutId)!.port }] })),
  }));
  processes.push(await spawnGateway(env), await spawnGateway(env));
}, 60_000);
afterAll(async () => {
  for (const p of processes) p.child.kill('SIGKILL');
  await bridge?.stop();
  for (const d of dumps.values()) d.child.kill('SIGKILL');
});

const mint = async (layoutId: string) => {
  const r = await postJson(`${processes[0]!.url}/token`, { layoutId }, { 'x-api-key': apiKey });
  expect(r.status).toBe(200);
  return r.body.token as string;
};
/** Participant i votes through process i % 2. */
const vote = async (layoutId: string, tokens: readonly string[], index: number) => {
  for (const [i, t] of tokens.entries()) expect(await postOnNewConnection(processes[i % 2]!.port, t, { layoutId, lid: 4, type: 'Index', value: index })).toBe(200);
};
/** What the display shows now for the vote: its counts and n. */
const shown = (layoutId: string) => {
  const d = dumps.get(layoutId)!;
  return { value: d.last('/004')?.values ?? null, n: d.last('/004/n')?.values[0] ?? null };
};
async function shows(layoutId: string, want: { value: number[]; n: number }, withinMs: number): Promise<void> {
  await eventually(() => JSON.stringify(shown(layoutId)) === JSON.stringify(want), withinMs).catch(() => {
    throw new Error(`the display shows ${JSON.stringify(shown(layoutId))}, not ${JSON.stringify(want)}, ${withinMs} ms on`);
  });
}

describe('revoked participants leave the crowd on every gateway process', () => {
  it('the end of a show: every participant of the layout leaves at once; one minted after it counts', async () => {
    const layoutId = layoutOf('end');
    const tokens = await Promise.all(Array.from({ length: 10 }, () => mint(layoutId)));
    await vote(layoutId, tokens, 1);
    await shows(layoutId, { value: [0, 10, 0], n: 10 }, 5000);
    await audiencectlJson(env, 'token', 'revoke', '--layout', layoutId);
    // the revocation message, a fold tick and a bridge tick; the vote's window is 60 s
    await shows(layoutId, { value: [0, 0, 0], n: 0 }, 2000);
    const next = await mint(layoutId);
    await vote(layoutId, [next], 2);
    await shows(layoutId, { value: [0, 0, 1], n: 1 }, 5000);
  }, 30_000);

  it('a cut-off in the past (--before): the participants minted before it leave, though they voted after it and moved since; the others stay', async () => {
    const layoutId = layoutOf('before');
    const early = await Promise.all(Array.from({ length: 4 }, () => mint(layoutId)));
    await new Promise((r) => setTimeout(r, 50));
    const cut = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 50));
    const late = await Promise.all(Array.from({ length: 6 }, () => mint(layoutId)));
    // the early ones vote through the first process, then move a Slider through the second: their
    // votes are handed over to it, with when their tokens were minted
    for (const t of early) expect(await postOnNewConnection(processes[0]!.port, t, { layoutId, lid: 4, type: 'Index', value: 0 })).toBe(200);
    for (const t of early) expect(await postOnNewConnection(processes[1]!.port, t, { layoutId, lid: 2, type: 'Slider', value: 0.5 })).toBe(200);
    await vote(layoutId, late, 2);
    await shows(layoutId, { value: [4, 0, 6], n: 10 }, 5000);
    await audiencectlJson(env, 'token', 'revoke', '--layout', layoutId, '--before', cut);
    await shows(layoutId, { value: [0, 0, 6], n: 6 }, 2000);
  }, 30_000);

  it('a revocation whose message no process heard: the re-check of the caches (CACHE_RECHECK_MS, 5 s) finds it, and the participants leave', async () => {
    const layoutId = layoutOf('missed');
    const tokens = await Promise.all(Array.from({ length: 6 }, () => mint(layoutId)));
    await vote(layoutId, tokens, 0);
    await shows(layoutId, { value: [6, 0, 0], n: 6 }, 5000);
    // the end of the show written straight to Redis, with no invalidation message
    const admin = new Redis(env.REDIS_URL);
    const key = `${env.REDIS_PREFIX}layout:{${layoutId}}`;
    await admin.multi().hset(key, 'tokensRevokedBefore', String(Date.now())).hincrby(key, 'version', 1).exec();
    admin.disconnect();
    await shows(layoutId, { value: [0, 0, 0], n: 0 }, 5000 + 3000);
  }, 30_000);

  it('one participant (--sub): it leaves, on whichever process counted it; the others stay', async () => {
    const layoutId = layoutOf('sub');
    const tokens = await Promise.all(Array.from({ length: 10 }, () => mint(layoutId)));
    await vote(layoutId, tokens, 1);
    await shows(layoutId, { value: [0, 10, 0], n: 10 }, 5000);
    for (const t of tokens.slice(0, 2)) await audiencectlJson(env, 'token', 'revoke', '--layout', layoutId, '--sub', decodeJwt(t).sub!);
    await shows(layoutId, { value: [0, 8, 0], n: 8 }, 2000);
  }, 30_000);
});
