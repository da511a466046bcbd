// Revocation fails closed: an API key whose record is gone from Redis (evicted under an allkeys-*
// policy, a partial restore, deleted by hand) counts as revoked, so its tokens stay refused on a
// running gateway, revoked or not before; and a gateway on a Redis whose maxmemory-policy can
// evict the system of record says so at start (its log and /readyz), and says nothing on noeviction.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { startRedisServer, type RedisServer } from '../../dev/redis-server.js';
import { eventually, mintToken, postAction, startTestGateway } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();

describe('an API key whose record is gone', () => {
  it('is revoked: its tokens are refused within the re-check, whether or not it was revoked before', async () => {
    const t = await startTestGateway({ redisUrl: redis.get().server.url, overrides: { cacheRecheckMs: 200 } });
    try {
      const act = (token: string) => postAction(t, token, { layoutId: t.layoutId, lid: 1, type: 'Button' });
      const revoked = await t.admin.apiKeys.create(t.teamId, { name: 'leaked' });
      const kept = await t.admin.apiKeys.create(t.teamId, { name: 'evicted' });
      const leakedToken = await mintToken(t, t.layoutId, revoked.apiKey);
      const keptToken = await mintToken(t, t.layoutId, kept.apiKey);
      expect([(await act(leakedToken)).status, (await act(keptToken)).status]).toEqual([200, 200]);
      await t.admin.apiKeys.revoke(revoked.keyId);
      await eventually(async () => (await act(leakedToken)).status === 401);
      // both records vanish, as under eviction
      await redis.get().client.del(t.admin.keys.apiKey(revoked.keyId), t.admin.keys.apiKey(kept.keyId));
      await new Promise((r) => setTimeout(r, 1000)); // five re-checks
      const [again, evicted] = [await act(leakedToken), await act(keptToken)];
      expect([again.status, again.body.error?.code]).toEqual([401, 'token_revoked']);
      expect([evicted.status, evicted.body.error?.code]).toEqual([401, 'token_revoked']);
    } finally {
      await t.close();
    }
  });
});

describe('a Redis that may evict', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ac-evict-'));
  const servers: RedisServer[] = [];
  afterAll(async () => {
    for (const s of servers) await s.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const startOn = async (policy: string) => {
    const server = await startRedisServer({ dir: join(dir, policy), appendOnly: false, extraArgs: ['--maxmemory', '200mb', '--maxmemory-policy', policy] });
    servers.push(server);
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk: Buffer, _e, done) => (lines.push(...chunk.toString().split('\n').filter(Boolean)), done()) });
    const t = await startTestGateway({ redisUrl: server.url, log: pino({ level: 'info' }, sink) });
    const readyz = await (await fetch(`http://127.0.0.1:${t.gw.opsPort}/readyz`)).text();
    await t.close();
    return { warned: lines.filter((l) => l.includes('maxmemory-policy')), readyz };
  };

  it.each(['allkeys-lru', 'allkeys-random', 'volatile-lru', 'volatile-ttl'])('%s: warned at start, in the log and /readyz', async (policy) => {
    const { warned, readyz } = await startOn(policy);
    expect(warned).toHaveLength(1);
    expect(JSON.parse(warned[0]!)).toMatchObject({ level: 40, policy });
    expect(readyz).toMatch(new RegExp(`^ready; note: .*maxmemory-policy ${policy}`));
  });

  it('noeviction: nothing said', async () => {
    const { warned, readyz } = await startOn('noeviction');
    expect([warned, readyz]).toEqual([[], 'ready\n']);
  });
});
