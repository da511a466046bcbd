// Stopping attendees without stopping the API key: `audiencectl token revoke --layout L` revokes every
// audience token of the layout minted before now (or --before), `--sub S` one participant's, and
// the team page's "End of show" does the first. Revoked tokens get 401 token_revoked on every
// gateway by the revocation message (milliseconds; the re-check is put out of reach, so nothing else
// could); tokens minted after the cut-off work, even within the same second.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeJwt } from 'jose';
import { signIn } from '../helpers/admin.js';
import { audiencectl, audiencectlJson } from '../helpers/cli.js';
import { eventually, mintToken, NO_RECHECK, postAction, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
let a: TestGateway;
let b: TestGateway;
let env: { REDIS_URL: string; REDIS_PREFIX: string };
beforeAll(async () => {
  // the re-check (CACHE_RECHECK_MS) set past the test's length: only the revocation message can
  // reach the second gateway, so the waits below need no race against a timer
  a = await startTestGateway({ redisUrl: redis.get().server.url, overrides: NO_RECHECK });
  b = await startTestGateway({ redisUrl: redis.get().server.url, sameDataAs: a, overrides: NO_RECHECK });
  env = { REDIS_URL: redis.get().server.url, REDIS_PREFIX: a.config.redisPrefix };
});
afterAll(async () => {
  await b.close();
  await a.close();
});

const act = (t: TestGateway, token: string) => postAction(t, token, { layoutId: a.layoutId, lid: 1, type: 'Button' });
const status = async (t: TestGateway, token: string) => {
  const r = await act(t, token);
  return r.status === 200 ? 'ok' : (r.body.error.code as string);
};

describe('audiencectl token revoke', () => {
  it('--layout: every token minted before now gets 401 token_revoked on both gateways by the message; one minted right after works', async () => {
    const old = [await mintToken(a, a.layoutId, a.apiKey), await mintToken(b, a.layoutId, a.apiKey)];
    for (const tok of old) for (const t of [a, b]) expect(await status(t, tok)).toBe('ok'); // cached on both
    const r = await audiencectlJson(env, 'token', 'revoke', '--layout', a.layoutId);
    const revokedAt = Date.now();
    expect(r.layoutId).toBe(a.layoutId);
    expect(Date.parse(r.revokedBefore as string)).toBeLessThanOrEqual(revokedAt);
    const fresh = await mintToken(a, a.layoutId, a.apiKey); // most likely within the same second as the cut-off
    expect((decodeJwt(fresh).mintedAt as number) >= Date.parse(r.revokedBefore as string)).toBe(true);
    await eventually(async () => {
      for (const tok of old) for (const t of [a, b]) if ((await status(t, tok)) !== 'token_revoked') return false;
      return true;
    });
    console.log(`figure: revocation reached both gateways ${Date.now() - revokedAt} ms after audiencectl returned`);
    for (const t of [a, b]) expect(await status(t, fresh)).toBe('ok');
  });

  it('--before TIME: tokens minted before it are revoked, later ones keep working', async () => {
    const early = await mintToken(a, a.layoutId, a.apiKey);
    await new Promise((r) => setTimeout(r, 50));
    const cut = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 50));
    const late = await mintToken(a, a.layoutId, a.apiKey);
    await audiencectlJson(env, 'token', 'revoke', '--layout', a.layoutId, '--before', cut);
    await eventually(async () => (await status(b, early)) === 'token_revoked');
    expect(await status(a, early)).toBe('token_revoked');
    expect(await status(a, late)).toBe('ok');
    expect(await status(b, late)).toBe('ok');
  });

  it('an earlier cut-off never un-revokes: the later one stays in force', async () => {
    const r = await audiencectlJson(env, 'token', 'revoke', '--layout', a.layoutId, '--before', '2020-01-01T00:00:00Z');
    expect(Date.parse(r.revokedBefore as string)).toBeGreaterThan(Date.parse('2025-01-01T00:00:00Z'));
  });

  it('--sub: only that participant', async () => {
    const target = await mintToken(a, a.layoutId, a.apiKey);
    const bystander = await mintToken(a, a.layoutId, a.apiKey);
    const sub = decodeJwt(target).sub!;
    const r = await audiencectlJson(env, 'token', 'revoke', '--layout', a.layoutId, '--sub', sub);
    expect(r).toMatchObject({ layoutId: a.layoutId, sub });
    await eventually(async () => (await status(a, target)) === 'token_revoked' && (await status(b, target)) === 'token_revoked');
    expect(await status(a, bystander)).toBe('ok');
    expect(await status(b, bystander)).toBe('ok');
  });

  it('refuses what it cannot do: an unknown layout (1), a malformed --sub or --before (2)', async () => {
    expect((await audiencectl(env, 'token', 'revoke', '--layout', 'no-such-layout', '--json')).code).toBe(1);
    expect((await audiencectl(env, 'token', 'revoke', '--layout', a.layoutId, '--sub', 'nobody', '--json')).code).toBe(2);
    expect((await audiencectl(env, 'token', 'revoke', '--layout', a.layoutId, '--before', 'yesterday-ish', '--json')).code).toBe(2);
  });
});

describe('the team page API: end of show', () => {
  it('POST /admin/api/layouts/{id}/revoke-tokens revokes every token minted before now; the layout list shows the cut-off', async () => {
    await a.admin.admins.create(a.teamId, 'host@team.example', 'stage-door-1234');
    const admin = await signIn(a, 'host@team.example', 'stage-door-1234');
    const before = await mintToken(a, a.layoutId, a.apiKey);
    expect(await status(a, before)).toBe('ok');
    const r = await admin.req('POST', `/admin/api/layouts/${a.layoutId}/revoke-tokens`, {});
    expect(r.status).toBe(200);
    await eventually(async () => (await status(b, before)) === 'token_revoked');
    expect(await status(a, await mintToken(a, a.layoutId, a.apiKey))).toBe('ok');
    const listed = await admin.req('GET', '/admin/api/layouts');
    expect(listed.body.layouts[0].tokensRevokedBefore).toBe(r.body.revokedBefore);
    const other = await admin.req('POST', '/admin/api/layouts/not-ours/revoke-tokens', {});
    expect([other.status, other.body.error.code]).toEqual([404, 'layout_not_found']);
  });
});
