// Renewing a participant's token (POST /token with renew), against a real gateway and Redis: the
// same sub and zone with a new iat and exp, counted once in a crowd value; an expired token within
// TOKEN_RENEW_GRACE_SECONDS renews and one past it does not; a revoked one (its layout's tokens,
// its participant, its API key) gets 401 token_revoked; one of another layout 400
// token_layout_mismatch; a tampered one 401 token_invalid.
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { TOKEN_ROUTE_CHARS, TOKEN_ROUTE_START, routeKey } from '../../gateway/auth/token-claims.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LayoutDefinition } from '../../schemas/types.js';
import { CROWD_LAYOUT } from '../helpers/crowd.js';
import { eventually, postAction, postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { connectLive } from '../helpers/live.js';
import { useRedis } from '../helpers/redis.js';

const LAYOUT: LayoutDefinition = { ...CROWD_LAYOUT, zones: ['left', 'right'] };
const redis = useRedis();
/** the gateway's clock runs this far ahead of the wall clock */
let ahead = 0;
let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ redisUrl: redis.get().server.url, layout: LAYOUT, now: () => Date.now() + ahead, overrides: { tokenTtlSeconds: 3600, tokenRenewGraceSeconds: 86400 } });
});
afterAll(() => t.close());

const token = async (body: object, apiKey = t.apiKey) => postJson(`${t.url}/token`, { layoutId: t.layoutId, ...body }, { 'x-api-key': apiKey });
const minted = async (body: object = {}) => {
  const r = await token(body);
  expect(r.status).toBe(200);
  return r.body.token as string;
};

describe('POST /token with renew', () => {
  it('mints a token for the same participant: the same sub and zone, a new iat and exp', async () => {
    const old = await minted({ zone: 'left' });
    ahead += 2000;
    const r = await token({ renew: old });
    expect(r.status).toBe(200);
    const [a, b] = [decodeJwt(old), decodeJwt(r.body.token as string)];
    expect(b.sub).toBe(a.sub);
    expect(b.zone).toBe('left');
    expect(b.iat).toBeGreaterThan(a.iat!);
    expect(b.exp).toBeGreaterThan(a.exp!);
    expect(new Date(r.body.expiresAt as string).getTime()).toBe(b.exp! * 1000);
  });

  it("starts every token of a participant with the same 36 characters (its routing key, first in the header), another participant's with others", async () => {
    const old = await minted();
    const renewed = (await token({ renew: old })).body.token as string;
    const other = await minted();
    expect(old.startsWith(TOKEN_ROUTE_START)).toBe(true);
    expect(renewed.slice(0, TOKEN_ROUTE_CHARS)).toBe(old.slice(0, TOKEN_ROUTE_CHARS));
    expect(other.slice(0, TOKEN_ROUTE_CHARS)).not.toBe(old.slice(0, TOKEN_ROUTE_CHARS));
    expect(Object.keys(decodeProtectedHeader(old))[0]).toBe('route');
    expect(decodeProtectedHeader(renewed).route).toBe(routeKey(decodeJwt(old).sub!));
  });

  it('counts a renewed participant once in every crowd value, in its zone', async () => {
    const watcher = await connectLive(t.url, await minted());
    const old = await minted({ zone: 'right' });
    expect((await postAction(t, old, { layoutId: t.layoutId, lid: 2, type: 'Slider', value: 0.2 })).status).toBe(200);
    const renewed = (await token({ renew: old })).body.token as string;
    expect((await postAction(t, renewed, { layoutId: t.layoutId, lid: 2, type: 'Slider', value: 0.8 })).status).toBe(200);
    await eventually(() => watcher.frames.some((f) => f.op === 'crowd' && f.lid === 2 && f.value === 0.8));
    const last = watcher.frames.filter((f) => f.op === 'crowd' && f.lid === 2).at(-1)!;
    expect(last).toMatchObject({ n: 1, value: 0.8, zones: { right: { n: 1, value: 0.8 } } });
    watcher.ws.close();
  });

  it('renews a token expired within TOKEN_RENEW_GRACE_SECONDS, not one expired longer ago', async () => {
    const old = await minted();
    ahead += 3600_000 + 60_000; // expired a minute ago
    expect((await postAction(t, old, { layoutId: t.layoutId, lid: 12, type: 'Slider', value: 0.5 })).body.error.code).toBe('token_expired');
    const r = await token({ renew: old });
    expect(r.status).toBe(200);
    expect((await postAction(t, r.body.token as string, { layoutId: t.layoutId, lid: 12, type: 'Slider', value: 0.5 })).status).toBe(200);
    ahead += 86400_000; // now past the grace
    const late = await token({ renew: old });
    expect([late.status, late.body.error.code]).toEqual([401, 'token_expired']);
  });

  it('refuses a revoked token with 401 token_revoked: its participant, its layout cut-off, its API key', async () => {
    const participant = await minted();
    await t.admin.layouts.revokeTokens(t.layoutId, { sub: decodeJwt(participant).sub! });
    await eventually(async () => (await token({ renew: participant })).status === 401);
    expect((await token({ renew: participant })).body.error.code).toBe('token_revoked');

    const before = await minted();
    await t.admin.layouts.revokeTokens(t.layoutId, { before: Date.now() + ahead + 1 });
    await eventually(async () => (await token({ renew: before })).status === 401);
    expect((await token({ renew: before })).body.error.code).toBe('token_revoked');

    const other = await t.admin.apiKeys.create(t.teamId, { name: 'rotating' });
    const byOldKey = (await token({}, other.apiKey)).body.token as string;
    await t.admin.apiKeys.revoke(other.keyId);
    await eventually(async () => (await token({ renew: byOldKey })).status === 401);
    expect((await token({ renew: byOldKey })).body.error.code).toBe('token_revoked');
  });

  it('refuses a token of another layout (400 token_layout_mismatch), a tampered one (401 token_invalid), and renew with a zone (400 invalid_body)', async () => {
    const otherLayout: LayoutDefinition = { ...LAYOUT, layoutId: 'other-show' };
    await t.admin.layouts.import(t.teamId, otherLayout);
    const foreign = (await postJson(`${t.url}/token`, { layoutId: 'other-show' }, { 'x-api-key': t.apiKey })).body.token as string;
    const mismatch = await token({ renew: foreign });
    expect([mismatch.status, mismatch.body.error.code]).toEqual([400, 'token_layout_mismatch']);
    const old = await minted();
    const tampered = old.slice(0, -2) + (old.endsWith('AA') ? 'BA' : 'AA');
    expect((await token({ renew: tampered })).body.error.code).toBe('token_invalid');
    const both = await token({ renew: old, zone: 'left' });
    expect([both.status, both.body.error.code]).toEqual([400, 'invalid_body']);
  });
});
