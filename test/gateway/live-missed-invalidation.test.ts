// A revocation whose invalidation message a gateway never heard (its subscriber was away, the
// publish was lost) still closes the sockets it revokes: at the gateway's next cache re-check
// (CACHE_RECHECK_MS), as it already bounds what /action accepts. Each revocation here is written
// to Redis as its store writes it, without the message.
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { mintToken, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { closeOf, connectLive, type LiveClient } from '../helpers/live.js';
import { useRedis } from '../helpers/redis.js';

const RECHECK_MS = 300;
const redis = useRedis();
let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ redisUrl: redis.get().server.url, overrides: { cacheRecheckMs: RECHECK_MS } });
});
afterAll(() => t.close());

/** Stays open past a few re-checks (the revocation did not reach it). */
async function staysOpen(c: LiveClient): Promise<void> {
  await new Promise((r) => setTimeout(r, RECHECK_MS * 4));
  expect(c.ws.readyState).toBe(WebSocket.OPEN);
}

describe('a revocation whose invalidation message was missed', () => {
  it("the layout's cut-off: its older sockets close with 4001 at the next re-check, a newer one stays", async () => {
    const older = await connectLive(t.url, await mintToken(t, t.layoutId, t.apiKey));
    await older.next('page');
    const cut = Date.now();
    await new Promise((r) => setTimeout(r, 5));
    const newer = await connectLive(t.url, await mintToken(t, t.layoutId, t.apiKey));
    await newer.next('page');
    const key = t.admin.keys.layout(t.layoutId);
    await t.admin.redis.multi().hset(key, 'tokensRevokedBefore', String(cut)).hincrby(key, 'version', 1).exec();
    expect(await closeOf(older)).toEqual({ code: 4001, reason: 'token_revoked' });
    await staysOpen(newer);
    newer.ws.close();
  });

  it("one participant: its socket closes with 4001, another participant's stays", async () => {
    const token = await mintToken(t, t.layoutId, t.apiKey);
    const revoked = await connectLive(t.url, token);
    const kept = await connectLive(t.url, await mintToken(t, t.layoutId, t.apiKey));
    await Promise.all([revoked.next('page'), kept.next('page')]);
    const key = t.admin.keys.layout(t.layoutId);
    await t.admin.redis.multi().hset(t.admin.keys.revokedSubs(t.layoutId), decodeJwt(token).sub!, String(Date.now())).hincrby(key, 'version', 1).exec();
    expect(await closeOf(revoked)).toEqual({ code: 4001, reason: 'token_revoked' });
    await staysOpen(kept);
    kept.ws.close();
  });

  it("an API key: the sockets of its tokens close with 4001, those of another key's stay", async () => {
    const other = await t.admin.apiKeys.create(t.teamId, { name: 'to revoke unheard' });
    const revoked = await connectLive(t.url, await mintToken(t, t.layoutId, other.apiKey));
    const kept = await connectLive(t.url, await mintToken(t, t.layoutId, t.apiKey));
    await Promise.all([revoked.next('page'), kept.next('page')]);
    await t.admin.redis.hsetnx(t.admin.keys.apiKey(other.keyId), 'revokedAt', String(Date.now()));
    expect(await closeOf(revoked)).toEqual({ code: 4001, reason: 'token_revoked' });
    await staysOpen(kept);
    kept.ws.close();
  });

  it('a retired signing key: the sockets of its tokens close with 4001, those of the current key stay', async () => {
    const old = await connectLive(t.url, await mintToken(t, t.layoutId, t.apiKey));
    await old.next('page');
    const retiring = (await t.admin.signingKeys.list()).find((k) => k.current)!.kid;
    await t.admin.signingKeys.rotate();
    // the gateway mints with the new key once it heard the rotation
    let fresh = '';
    for (let i = 0; i < 100; i++) {
      fresh = await mintToken(t, t.layoutId, t.apiKey);
      if (JSON.parse(Buffer.from(fresh.split('.')[0]!, 'base64url').toString()).kid !== retiring) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const renewed = await connectLive(t.url, fresh);
    await renewed.next('page');
    const stored = JSON.parse((await t.admin.redis.hget(t.admin.keys.signingKeys(), retiring))!) as Record<string, unknown>;
    await t.admin.redis.hset(t.admin.keys.signingKeys(), retiring, JSON.stringify({ ...stored, retiredAt: Date.now() }));
    expect(await closeOf(old)).toEqual({ code: 4001, reason: 'token_revoked' });
    await staysOpen(renewed);
    renewed.ws.close();
  });
});
