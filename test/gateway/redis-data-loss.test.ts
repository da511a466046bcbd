// Redis that lost its data (a restart without persistence, FLUSHALL, failover to an empty replica):
// the gateway makes a new signing key by itself, so once an operator imports the layout again
// and creates a key, /token and /action work with no gateway restart and no `signing-key rotate`.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedisServer, type RedisServer } from '../../dev/redis-server.js';
import { DEMO_LAYOUT, eventually, postAction, postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';

let server: RedisServer;
let dir: string;
let t: TestGateway;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ac-redis-'));
  server = await startRedisServer({ dir, appendOnly: false }); // no persistence: a restart comes back empty
  // the periodic re-check is far away, so only the reconnect (or the data check) can bring the key back
  t = await startTestGateway({ redisUrl: server.url, overrides: { cacheRecheckMs: 300_000 } });
});
afterAll(async () => {
  await t.close();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** What an operator does after the loss: the team, the layout and a key again (audiencectl's calls). */
async function reseed(): Promise<string> {
  const team = await t.admin.teams.create('Again');
  await t.admin.layouts.import(team.teamId, DEMO_LAYOUT);
  return (await t.admin.apiKeys.create(team.teamId, { name: 'after the loss' })).apiKey;
}

async function tokenWorks(apiKey: string): Promise<boolean> {
  const r = await postJson(`${t.url}/token`, { layoutId: DEMO_LAYOUT.layoutId }, { 'x-api-key': apiKey });
  if (r.status !== 200) return false;
  const a = await postAction(t, r.body.token as string, { layoutId: DEMO_LAYOUT.layoutId, lid: 1, type: 'Button' });
  return a.status === 200;
}

describe('Redis that lost its data', () => {
  it('after a restart without persistence: a signing key exists again and /token and /action work', async () => {
    expect(await tokenWorks(t.apiKey)).toBe(true);
    await server.kill();
    await server.restart();
    await eventually(async () => (await t.admin.signingKeys.list().catch(() => [])).some((k) => k.current));
    const apiKey = await reseed();
    await eventually(() => tokenWorks(apiKey));
  });

  it('after FLUSHALL (no reconnect): a signing key exists again within the re-check interval', async () => {
    const quick = await startTestGateway({ redisUrl: server.url, overrides: { cacheRecheckMs: 200 } });
    const client = new Redis(server.url);
    try {
      await client.flushall();
      await eventually(async () => (await client.keys('*signing*')).length >= 2); // the keys hash and the current kid
      const apiKey = await reseed();
      await eventually(() => tokenWorks(apiKey));
    } finally {
      client.disconnect();
      await quick.close();
    }
  });
});
