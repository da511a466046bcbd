// How control-plane changes reach running gateways: key revocation (next request, in-flight
// requests, a missed invalidation message, several instances), page switches, signing keys.
import { decodeProtectedHeader } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisKeys } from '../../gateway/store/keys.js';
import { DEMO_LAYOUT, eventually, NO_RECHECK, getLayout, mintToken, postAction, postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

const redis = useRedis();
const open: TestGateway[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((g) => g.close()));
});
async function gateway(o: Parameters<typeof startTestGateway>[0]): Promise<TestGateway> {
  const g = await startTestGateway(o);
  open.push(g);
  return g;
}
/** A second gateway instance on the same data as the first. */
function twin(first: TestGateway): Promise<TestGateway> {
  return gateway({ redisUrl: redis.get().server.url, sameDataAs: first });
}

describe('API key revocation', () => {
  it('rejects the key from the very next request, on every instance, and the tokens it minted', async () => {
    const a = await gateway({ redisUrl: redis.get().server.url, overrides: NO_RECHECK });
    const b = await gateway({ redisUrl: redis.get().server.url, sameDataAs: a, overrides: NO_RECHECK });
    const token = await mintToken(a, a.layoutId, a.apiKey);
    expect((await getLayout(a, a.layoutId, a.apiKey)).status).toBe(200);
    expect((await getLayout(b, b.layoutId, a.apiKey)).status).toBe(200);
    expect((await postAction(a, token, { layoutId: a.layoutId, lid: 1, type: 'Button' })).status).toBe(200);

    await a.admin.apiKeys.revoke(a.keyId);

    for (const g of [a, b]) {
      const l = await getLayout(g, g.layoutId, a.apiKey);
      expect(l.status).toBe(401);
      expect(l.body.error.code).toBe('api_key_revoked');
      const tk = await postJson(`${g.url}/token`, { layoutId: g.layoutId }, { 'x-api-key': a.apiKey });
      expect(tk.body.error.code).toBe('api_key_revoked');
    }
    // /action checks revocation in memory (no Redis read on the hot path): the revocation message
    // updates it, the only path with the re-check out of reach; how long it took is printed.
    const revoked = performance.now();
    for (const g of [a, b]) {
      await eventually(async () => (await postAction(g, token, { layoutId: g.layoutId, lid: 1, type: 'Button' })).status === 401);
      console.log(`figure: /action refused the revoked key's token ${(performance.now() - revoked).toFixed(1)} ms after the revocation`);
      const act = await postAction(g, token, { layoutId: g.layoutId, lid: 1, type: 'Button' });
      expect(act.body.error.code).toBe('token_revoked');
    }
  });

  it('fails requests already received but not yet answered', async () => {
    const proxy = new TcpProxy(redis.get().server.port);
    await proxy.start();
    try {
      const t = await gateway({ redisUrl: `redis://127.0.0.1:${proxy.port}` });
      expect((await getLayout(t, t.layoutId, t.apiKey)).status).toBe(200); // key now cached
      await t.admin.layouts.import(t.teamId, { ...DEMO_LAYOUT, layoutId: 'cold-layout' });
      // Hold the gateway's data connection (not its subscriber): the next Redis read waits in the proxy.
      proxy.hold((l) => l.hello.includes('audience-gateway') && !l.hello.includes('audience-gateway-sub'));
      const inFlightLayout = getLayout(t, 'cold-layout', t.apiKey);
      const inFlightToken = postJson(`${t.url}/token`, { layoutId: 'cold-layout' }, { 'x-api-key': t.apiKey });
      await new Promise((r) => setTimeout(r, 100));
      await t.admin.apiKeys.revoke(t.keyId); // committed while both requests wait on Redis
      proxy.release();
      const [l, tk] = await Promise.all([inFlightLayout, inFlightToken]);
      expect(l.status).toBe(401);
      expect(l.body.error.code).toBe('api_key_revoked');
      expect(tk.status).toBe(401);
    } finally {
      proxy.release();
      await proxy.stop();
    }
  });

  it('catches a revocation whose message was missed: API-key routes at once, /action within the re-check period', async () => {
    const t = await gateway({ redisUrl: redis.get().server.url, overrides: { cacheRecheckMs: 200 } });
    const token = await mintToken(t, t.layoutId, t.apiKey);
    const act = () => postAction(t, token, { layoutId: t.layoutId, lid: 1, type: 'Button' });
    expect((await act()).status).toBe(200);
    // Revoke behind the gateway's back: the key's record, but no message.
    const c = redis.get().client;
    const keys = new RedisKeys(t.config.redisPrefix);
    await c.hset(keys.apiKey(t.keyId), 'revokedAt', String(Date.now()));
    const started = Date.now();
    // /action only knows what reached memory: the periodic re-check (200 ms here) must find it.
    await eventually(async () => (await act()).status === 401);
    expect(Date.now() - started).toBeLessThan(1000);
    expect((await act()).body.error.code).toBe('token_revoked');
    // the API-key routes read Redis as their last step
    const other = await t.admin.apiKeys.create(t.teamId, { name: 'other' });
    await c.hset(keys.apiKey(other.keyId), 'revokedAt', String(Date.now()));
    expect((await getLayout(t, t.layoutId, other.apiKey)).status).toBe(401);
  });

  it('serves a key created after the gateway cached its absence', async () => {
    const t = await gateway({ redisUrl: redis.get().server.url });
    const created = await t.admin.apiKeys.create(t.teamId, { name: 'late' });
    // the same keyId can only be asked for after creation, but a cached "unknown" must not outlive creation
    expect((await getLayout(t, t.layoutId, created.apiKey)).status).toBe(200);
  });
});

describe('page switches', () => {
  it('reach every instance by their message: discovery and actions follow the active page', async () => {
    const a = await gateway({ redisUrl: redis.get().server.url, overrides: NO_RECHECK });
    const b = await gateway({ redisUrl: redis.get().server.url, sameDataAs: a, overrides: NO_RECHECK });
    const token = await mintToken(a, a.layoutId, a.apiKey);
    expect((await postAction(b, token, { layoutId: a.layoutId, lid: 2, type: 'Slider', value: 0.5 })).status).toBe(200);

    await a.admin.layouts.activate(a.layoutId, 'encore');

    const switched = performance.now();
    for (const g of [a, b]) {
      await eventually(async () => (await getLayout(g, a.layoutId, a.apiKey)).body.activePageId === 'encore');
      console.log(`figure: page switch seen ${(performance.now() - switched).toFixed(1)} ms after activate`);
      const d = await getLayout(g, a.layoutId, a.apiKey);
      expect(d.body.controls.map((c: { lid: number }) => c.lid)).toEqual([7, 8, 9]);
      expect((await postAction(g, token, { layoutId: a.layoutId, lid: 7, type: 'Button' })).status).toBe(200);
      const old = await postAction(g, token, { layoutId: a.layoutId, lid: 2, type: 'Slider', value: 0.5 });
      expect(old.body.error.code).toBe('control_not_found');
    }
  });

  it('is caught by the re-check when its message was missed', async () => {
    const t = await gateway({ redisUrl: redis.get().server.url, overrides: { cacheRecheckMs: 200 } });
    expect((await getLayout(t, t.layoutId, t.apiKey)).body.activePageId).toBe('main');
    const c = redis.get().client;
    await c.hset(`${t.config.redisPrefix}layout:{${t.layoutId}}`, 'activePageId', 'encore');
    await c.hincrby(`${t.config.redisPrefix}layout:{${t.layoutId}}`, 'version', 1);
    await eventually(async () => (await getLayout(t, t.layoutId, t.apiKey)).body.activePageId === 'encore');
  });
});

describe('signing keys', () => {
  it('rotate: new tokens carry the new kid, older tokens keep verifying; retire: they stop', async () => {
    const t = await gateway({ redisUrl: redis.get().server.url });
    const oldToken = await mintToken(t, t.layoutId, t.apiKey);
    const oldKid = decodeProtectedHeader(oldToken).kid!;
    const body = { layoutId: t.layoutId, lid: 1, type: 'Button' };
    expect((await postAction(t, oldToken, body)).status).toBe(200); // cached from here on

    const rotated = await t.admin.signingKeys.rotate();
    await eventually(async () => decodeProtectedHeader(await mintToken(t, t.layoutId, t.apiKey)).kid === rotated.kid);
    const newToken = await mintToken(t, t.layoutId, t.apiKey);
    expect((await postAction(t, oldToken, body)).status).toBe(200);
    expect((await postAction(t, newToken, body)).status).toBe(200);

    await expect(t.admin.signingKeys.retire(rotated.kid)).rejects.toMatchObject({ code: 'signing_key_in_use' });
    await t.admin.signingKeys.retire(oldKid);
    await eventually(async () => (await postAction(t, oldToken, body)).status === 401);
    const r = await postAction(t, oldToken, body);
    expect(r.body.error.code).toBe('token_revoked');
    expect((await postAction(t, newToken, body)).status).toBe(200);
    // a gateway started later agrees
    const later = await twin(t);
    expect((await postAction(later, oldToken, body)).body.error.code).toBe('token_revoked');
    expect((await postAction(later, newToken, body)).status).toBe(200);
  });

  it('a rotation while a gateway starts, before it listens for changes, reaches it by the time it serves', async () => {
    const t = await gateway({ redisUrl: redis.get().server.url, overrides: NO_RECHECK });
    const proxy = new TcpProxy(redis.get().server.port);
    await proxy.start();
    try {
      // the starting gateway has loaded the keys; its subscription waits in the proxy
      proxy.holdFrom((chunk) => /\bsubscribe\b/i.test(chunk));
      const starting = gateway({ redisUrl: `redis://127.0.0.1:${proxy.port}`, sameDataAs: t, overrides: NO_RECHECK });
      await eventually(() => proxy.holding);
      const rotated = await t.admin.signingKeys.rotate(); // its message goes out before the subscription
      proxy.release();
      const late = await starting;
      expect(decodeProtectedHeader(await mintToken(late, late.layoutId, late.apiKey)).kid).toBe(rotated.kid);
      expect((await postAction(late, await mintToken(t, t.layoutId, t.apiKey), { layoutId: t.layoutId, lid: 1, type: 'Button' })).status).toBe(200);
    } finally {
      await proxy.stop();
    }
  });
});

