// One API key mints audience tokens at a bounded rate (per gateway process): every token is a
// participant, so the mint rate bounds how fast one key can add voices to a crowd. A key may be
// created with its own rate and burst (audiencectl, the team page's API); past it 429 rate_limited
// with Retry-After.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audiencectlJson } from '../helpers/cli.js';
import { postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ redisUrl: redis.get().server.url, overrides: { mintRatePerSecond: 20, mintBurst: 50 } });
});
afterAll(() => t.close());

const mint = (apiKey: string) => postJson(`${t.url}/token`, { layoutId: t.layoutId }, { 'x-api-key': apiKey });

describe('POST /token per API key', () => {
  it('a flood of mints gets at most the burst plus the rate over its duration; the rest 429 with Retry-After', async () => {
    const key = await t.admin.apiKeys.create(t.teamId, { name: 'flood' });
    const started = Date.now();
    let minted = 0;
    let refused = 0;
    let retryAfter = '';
    while (Date.now() - started < 2000) {
      const answers = await Promise.all(Array.from({ length: 50 }, () => mint(key.apiKey)));
      for (const a of answers) {
        if (a.status === 200) minted++;
        else {
          expect([a.status, a.body.error.code]).toEqual([429, 'rate_limited']);
          refused++;
          retryAfter = a.headers.get('retry-after') ?? '';
        }
      }
    }
    const seconds = (Date.now() - started) / 1000;
    console.log(`figure: ${minted} tokens minted and ${refused} refused in ${seconds.toFixed(1)} s (burst 50, 20/s)`);
    expect(minted).toBeGreaterThanOrEqual(50);
    expect(minted).toBeLessThanOrEqual(50 + Math.ceil(20 * seconds) + 1);
    expect(refused).toBeGreaterThan(0);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  });

  it('one key’s limit leaves another key of the same team alone', async () => {
    // a rate that refills nothing within the test, however slow the machine: the burst is the whole budget
    const a = await t.admin.apiKeys.create(t.teamId, { name: 'a', mintRate: 0.01, mintBurst: 5 });
    const b = await t.admin.apiKeys.create(t.teamId, { name: 'b', mintRate: 0.01, mintBurst: 5 });
    const statuses = await Promise.all(Array.from({ length: 8 }, () => mint(a.apiKey)));
    expect(statuses.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
    expect((await mint(a.apiKey)).status).toBe(429);
    expect((await mint(b.apiKey)).status).toBe(200);
  });

  it('a key created with its own burst and rate (audiencectl) is held to them, and `key list` shows them', async () => {
    const env = { REDIS_URL: redis.get().server.url, REDIS_PREFIX: t.config.redisPrefix };
    const created = await audiencectlJson(env, 'key', 'create', '--team', t.teamId, '--name', 'small', '--mint-burst', '3', '--mint-rate', '0.5');
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await mint(created.apiKey as string)).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const listed = await audiencectlJson(env, 'key', 'list', '--team', t.teamId);
    const info = (listed.keys as { keyId: string; mintRate?: number; mintBurst?: number }[]).find((k) => k.keyId === created.keyId);
    expect(info).toMatchObject({ mintRate: 0.5, mintBurst: 3 });
  });

  it('refuses a mint rate or burst out of range at creation (exit 2, invalid_argument)', async () => {
    const env = { REDIS_URL: redis.get().server.url, REDIS_PREFIX: t.config.redisPrefix };
    await expect(audiencectlJson(env, 'key', 'create', '--team', t.teamId, '--mint-burst', '0')).rejects.toThrow(/exit 2.*mint burst/s);
    await expect(audiencectlJson(env, 'key', 'create', '--team', t.teamId, '--mint-rate', 'fast')).rejects.toThrow(/exit 2.*--mint-rate/s);
  });
});
