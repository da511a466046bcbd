// GET /layout and POST /token: every status row of the spec plus the API-key rules (scope, allow-list, 401s).
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_LAYOUT, call, eventually, getLayout, postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
let t: TestGateway;
let otherTeamLayout: string;

beforeAll(async () => {
  t = await startTestGateway({ redisUrl: redis.get().server.url });
  const other = await t.admin.teams.create('Other team');
  otherTeamLayout = 'other-show';
  await t.admin.layouts.import(other.teamId, { ...DEMO_LAYOUT, layoutId: otherTeamLayout, name: 'Other' });
});
afterAll(() => t.close());

describe('GET /layout/{layoutId}', () => {
  it('returns the active page controls, activePageId and destinationCount', async () => {
    const r = await getLayout(t, t.layoutId, t.apiKey);
    expect(r.status).toBe(200);
    expect(r.headers.get('x-request-id')).toBeTruthy();
    expect(r.body.layoutId).toBe('demo-show');
    expect(r.body.activePageId).toBe('main');
    expect(r.body.destinationCount).toBe(0);
    expect(r.body.controls.map((c: { type: string }) => c.type)).toEqual(['Button', 'Slider', 'Toggle', 'Index', 'String', 'XYPad']);
    expect(r.body.controls[3]).toEqual({
      lid: 4,
      address: '/004',
      type: 'Index',
      props: { label: 'Colour' },
      options: [
        { index: 0, label: 'Red' },
        { index: 1, label: 'Green' },
        { index: 2, label: 'Blue' },
      ],
    });
  });

  it('sends no CORS headers: the API key must never be used from a browser', async () => {
    const r = await call(`${t.url}/layout/${t.layoutId}`, { headers: { 'x-api-key': t.apiKey, origin: 'https://fans.example' } });
    expect(r.status).toBe(200);
    expect(r.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('answers 401 api_key_missing without a key', async () => {
    const r = await getLayout(t, t.layoutId, null);
    expect(r.status).toBe(401);
    expect(r.body).toEqual({ success: false, error: { code: 'api_key_missing', message: expect.any(String) } });
  });

  it.each([['garbage'], ['ak_0000.secret'], ['.'], ['ak_00000000000000zz.' + 'a'.repeat(43)]])('answers 401 api_key_invalid for a malformed key %s', async (k) => {
    const r = await getLayout(t, t.layoutId, k);
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('api_key_invalid');
  });

  it('gives an unknown keyId and a wrong secret the same answer', async () => {
    const [keyId, secret] = t.apiKey.split('.') as [string, string];
    const wrongSecret = `${keyId}.${secret.slice(0, -1)}${secret.endsWith('A') ? 'B' : 'A'}`;
    const unknownKey = `ak_0123456789abcdef.${secret}`;
    const a = await getLayout(t, t.layoutId, wrongSecret);
    const b = await getLayout(t, t.layoutId, unknownKey);
    expect(a.status).toBe(401);
    expect(a.body).toEqual(b.body);
    expect([...a.headers.keys()].sort()).toEqual([...b.headers.keys()].sort());
  });

  it('answers 404 layout_not_found for an unknown layout and for another team’s layout alike', async () => {
    const unknown = await getLayout(t, 'no-such-layout', t.apiKey);
    const foreign = await getLayout(t, otherTeamLayout, t.apiKey);
    expect(unknown.status).toBe(404);
    expect(foreign.status).toBe(404);
    expect(unknown.body).toEqual(foreign.body);
    expect(unknown.body.error.code).toBe('layout_not_found');
  });

  it('answers 404 for a layoutId that cannot exist', async () => {
    const r = await getLayout(t, encodeURIComponent('{bad}'), t.apiKey);
    expect(r.status).toBe(404);
  });

  it('limits an allow-listed key to its layouts', async () => {
    await t.admin.layouts.import(t.teamId, { ...DEMO_LAYOUT, layoutId: 'second-show', name: 'Second' });
    const limited = await t.admin.apiKeys.create(t.teamId, { name: 'limited', layouts: ['second-show'] });
    expect((await getLayout(t, 'second-show', limited.apiKey)).status).toBe(200);
    expect((await getLayout(t, t.layoutId, limited.apiKey)).status).toBe(404);
    // the team-scoped key covers layouts created after it
    expect((await getLayout(t, 'second-show', t.apiKey)).status).toBe(200);
    const tok = await postJson(`${t.url}/token`, { layoutId: t.layoutId }, { 'x-api-key': limited.apiKey });
    expect(tok.status).toBe(400);
    expect(tok.body.error.code).toBe('layout_not_found');
  });

  it('records lastUsedAt for a key that was used', async () => {
    await getLayout(t, t.layoutId, t.apiKey);
    const info = (await t.admin.apiKeys.listByTeam(t.teamId)).find((k) => k.keyId === t.keyId);
    expect(info?.lastUsedAt).toBeGreaterThan(0);
  });
});

describe('POST /token', () => {
  const token = (body: unknown, headers: Record<string, string> = {}) => postJson(`${t.url}/token`, body, { 'x-api-key': t.apiKey, ...headers });

  it('mints an HS256 audience token with the documented claims', async () => {
    const before = Math.floor(Date.now() / 1000);
    const r = await token({ layoutId: t.layoutId });
    expect(r.status).toBe(200);
    expect(typeof r.body.token).toBe('string');
    const header = decodeProtectedHeader(r.body.token);
    expect(header).toMatchObject({ alg: 'HS256', typ: 'audience+jwt' });
    expect(header.kid).toMatch(/^sk_/);
    const claims = decodeJwt(r.body.token);
    expect(claims).toMatchObject({ iss: 'audience-control', aud: 'audience-control/action', layoutId: t.layoutId, team: t.teamId, keyId: t.keyId });
    expect(claims.sub).toMatch(/^aud_/);
    expect(claims.iat).toBeGreaterThanOrEqual(before);
    expect(claims.exp! - claims.iat!).toBe(86400);
    expect(Date.parse(r.body.expiresAt)).toBe(claims.exp! * 1000);
    // each token is a different audience member
    expect(decodeJwt((await token({ layoutId: t.layoutId })).body.token).sub).not.toBe(claims.sub);
  });

  it('sends no CORS headers', async () => {
    const r = await token({ layoutId: t.layoutId }, { origin: 'https://fans.example' });
    expect(r.headers.get('access-control-allow-origin')).toBeNull();
  });

  it.each([
    ['missing', {}],
    ['not a string', { layoutId: 42 }],
    ['empty', { layoutId: '' }],
    ['with forbidden characters', { layoutId: 'a b' }],
    ['with an unknown field', { layoutId: 'demo-show', extra: 1 }],
    ['not an object', [1, 2]],
  ])('answers 400 invalid_body when layoutId is %s', async (_what, body) => {
    const r = await token(body);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('invalid_body');
  });

  it('answers 400 layout_not_found for an unknown or foreign layout, identically', async () => {
    const a = await token({ layoutId: 'nope' });
    const b = await token({ layoutId: otherTeamLayout });
    expect(a.status).toBe(400);
    expect(a.body).toEqual(b.body);
    expect(a.body.error.code).toBe('layout_not_found');
  });

  it('answers 401 for a missing or invalid API key', async () => {
    const missing = await postJson(`${t.url}/token`, { layoutId: t.layoutId });
    expect(missing.status).toBe(401);
    expect(missing.body.error.code).toBe('api_key_missing');
    const invalid = await postJson(`${t.url}/token`, { layoutId: t.layoutId }, { 'x-api-key': 'nope' });
    expect(invalid.status).toBe(401);
    expect(invalid.body.error.code).toBe('api_key_invalid');
  });

  it('answers 400 invalid_json for malformed JSON and 415 for another content type', async () => {
    const bad = await token('{"layoutId":');
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('invalid_json');
    const text = await call(`${t.url}/token`, { method: 'POST', headers: { 'x-api-key': t.apiKey, 'content-type': 'text/plain' }, body: '{}' });
    expect(text.status).toBe(415);
    expect(text.body.error.code).toBe('unsupported_media_type');
  });
});

describe('lastUsedAt', () => {
  it('is written coarsely: at most once a minute per key and gateway', async () => {
    let clock = Date.parse('2026-11-21T12:00:00Z');
    const g = await startTestGateway({ redisUrl: redis.get().server.url, now: () => clock });
    try {
      const lastUsed = async () => (await g.admin.apiKeys.get(g.keyId))?.lastUsedAt ?? null;
      expect((await getLayout(g, g.layoutId, g.apiKey)).status).toBe(200);
      await eventually(async () => (await lastUsed()) === clock);
      const first = clock;
      clock += 30_000;
      expect((await getLayout(g, g.layoutId, g.apiKey)).status).toBe(200);
      await new Promise((r) => setTimeout(r, 100));
      expect(await lastUsed()).toBe(first); // within the minute: not written again
      clock += 31_000;
      expect((await getLayout(g, g.layoutId, g.apiKey)).status).toBe(200);
      await eventually(async () => (await lastUsed()) === clock);
    } finally {
      await g.close();
    }
  });
});
