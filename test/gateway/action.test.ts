// POST /action: token checks, the value table of spec 4.3, what reaches the stream, and CORS.
import { SignJWT, base64url, decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeActionEntry } from '../../schemas/action-entry.js';
import { call, mintToken, postAction, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
let t: TestGateway;
let token: string;
let clock = Date.now();

beforeAll(async () => {
  t = await startTestGateway({ redisUrl: redis.get().server.url, now: () => clock });
  token = await mintToken(t, t.layoutId, t.apiKey);
});
afterAll(() => t.close());

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const act = (body: Record<string, unknown>, tok = token) => postAction(t, tok, { layoutId: t.layoutId, ...body });

async function lastEntry() {
  const entries = await redis.get().client.xrevrange(t.config.redisPrefix + `layout:{${t.layoutId}}:actions`, '+', '-', 'COUNT', 1);
  const decoded = decodeActionEntry(entries[0]![1]);
  if (!decoded.ok) throw new Error(decoded.reason);
  return decoded.entry;
}

describe('accepted actions', () => {
  it.each([
    ['Button', 1, undefined, null],
    ['Button', 1, null, null],
    ['Slider', 2, 0, 0],
    ['Slider', 2, 1, 1],
    ['Slider', 2, 0.25, 0.25],
    ['Toggle', 3, true, true],
    ['Toggle', 3, false, false],
    ['Index', 4, 2, 2],
    ['String', 5, 'hello 🎉', 'hello 🎉'],
    ['String', 5, 'é'.repeat(1024), 'é'.repeat(1024)],
    ['XYPad', 6, [0, 1], [0, 1]],
    ['XYPad', 6, [0.5, 0.25], [0.5, 0.25]],
  ])('accepts %s lid %i value %.40j and appends it to the stream', async (type, lid, value, stored) => {
    const r = await act(value === undefined ? { lid, type } : { lid, type, value });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ success: true });
    const e = await lastEntry();
    expect(e).toMatchObject({ v: 1, layoutId: t.layoutId, lid, type, value: stored, address: `/00${lid}` });
    expect(e.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(e.ts).toBe(clock); // the gateway's receive time, from its (frozen) clock
  });

  it('gives every accepted action its own id', async () => {
    await act({ lid: 1, type: 'Button' });
    const a = await lastEntry();
    await act({ lid: 1, type: 'Button' });
    const b = await lastEntry();
    expect(a.id).not.toBe(b.id);
  });
});

describe('rejected values (400 invalid_value)', () => {
  it.each([
    ['Button', 1, 0],
    ['Button', 1, false],
    ['Slider', 2, -0.01],
    ['Slider', 2, 1.0001],
    ['Slider', 2, '0.5'],
    ['Slider', 2, null],
    ['Slider', 2, 1e999],
    ['Toggle', 3, 1],
    ['Toggle', 3, 'true'],
    ['Index', 4, 3],
    ['Index', 4, -1],
    ['Index', 4, 1.5],
    ['Index', 4, '1'],
    ['String', 5, 'x'.repeat(1025)],
    ['String', 5, 5],
    ['XYPad', 6, [0.5]],
    ['XYPad', 6, [0.5, 0.5, 0.5]],
    ['XYPad', 6, [0.5, 2]],
    ['XYPad', 6, ['0.5', 0.5]],
    ['XYPad', 6, { x: 0.5, y: 0.5 }],
  ])('%s lid %i refuses %.40j', async (type, lid, value) => {
    const body = typeof value === 'number' && !Number.isFinite(value) ? `{"layoutId":"${t.layoutId}","lid":${lid},"type":"${type}","value":1e999}` : null;
    const r = body ? await postAction(t, token, body) : await act({ lid, type, value });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('invalid_value');
  });

  it('refuses a missing value where one is required', async () => {
    const r = await act({ lid: 2, type: 'Slider' });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('invalid_value');
  });
});

describe('rejected requests (400)', () => {
  it('answers control_not_found for a lid not on the active page', async () => {
    const r = await act({ lid: 7, type: 'Button' }); // lid 7 is on the inactive "encore" page
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('control_not_found');
  });

  it('answers type_mismatch when the type differs from the control’s', async () => {
    const r = await act({ lid: 2, type: 'Toggle', value: true });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('type_mismatch');
  });

  it.each([
    ['missing layoutId', { lid: 1, type: 'Button' }],
    ['missing lid', { layoutId: 'demo-show', type: 'Button' }],
    ['missing type', { layoutId: 'demo-show', lid: 1 }],
    ['unknown type', { layoutId: 'demo-show', lid: 1, type: 'Knob' }],
    ['fractional lid', { layoutId: 'demo-show', lid: 1.5, type: 'Button' }],
    ['string lid', { layoutId: 'demo-show', lid: '1', type: 'Button' }],
    ['unknown field', { layoutId: 'demo-show', lid: 1, type: 'Button', extra: true }],
    ['an array body', [1]],
    ['a null body', null],
  ])('answers invalid_body for %s', async (_what, body) => {
    const r = await postAction(t, token, body);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('invalid_body');
  });

  it('names the offending field in the message', async () => {
    const r = await postAction(t, token, { layoutId: 'demo-show', lid: 1, type: 'Button', colour: 'red' });
    expect(r.body.error.message).toContain('colour');
  });
});

describe('token checks (401)', () => {
  async function signWith(alg: string, claims: Record<string, unknown>, header: Record<string, unknown> = {}) {
    const { current, keys } = await t.admin.signingKeys.load();
    const key = keys.find((k) => k.kid === current)!;
    return new SignJWT(claims).setProtectedHeader({ alg, typ: 'audience+jwt', kid: key.kid, ...header }).sign(key.secret);
  }
  const goodClaims = () => {
    const c = decodeJwt(token);
    return { ...c };
  };

  it('a token crafted with the real key and claims is accepted (the checks below are not vacuous)', async () => {
    const r = await act({ lid: 1, type: 'Button' }, await signWith('HS256', goodClaims()));
    expect(r.status).toBe(200);
  });

  it('answers token_missing without a bearer token', async () => {
    for (const authorization of [undefined, 'Basic abc', 'Bearer ', token]) {
      const r = await call(`${t.url}/action`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(authorization !== undefined && { authorization }) },
        body: JSON.stringify({ layoutId: t.layoutId, lid: 1, type: 'Button' }),
      });
      expect(r.status).toBe(401);
      expect(r.body.error.code).toBe('token_missing');
    }
  });

  it('refuses alg none', async () => {
    const enc = (o: object) => base64url.encode(JSON.stringify(o));
    const { current } = await t.admin.signingKeys.load();
    const none = `${enc({ alg: 'none', typ: 'audience+jwt', kid: current })}.${enc(goodClaims())}.`;
    const r = await act({ lid: 1, type: 'Button' }, none);
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('token_invalid');
  });

  it('refuses another algorithm even with the right secret', async () => {
    const r = await act({ lid: 1, type: 'Button' }, await signWith('HS512', goodClaims()));
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('token_invalid');
  });

  it.each([
    ['a wrong typ', {}, { typ: 'JWT' }],
    ['a wrong issuer', { iss: 'someone-else' }, {}],
    ['a wrong audience', { aud: 'other' }, {}],
    ['an unknown kid', {}, { kid: 'sk_000000000000' }],
    ['no kid', {}, { kid: undefined }],
  ])('refuses %s', async (_what, claims, header) => {
    const r = await act({ lid: 1, type: 'Button' }, await signWith('HS256', { ...goodClaims(), ...claims }, header));
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('token_invalid');
  });

  it.each([
    ['the signature’s unused low bits set', (s: string) => `${s.slice(0, -1)}${ALPHABET[ALPHABET.indexOf(s.at(-1)!) | 1]}`],
    ['a trailing =', (s: string) => `${s}=`],
    ['a space inside the signature', (s: string) => `${s.slice(0, 20)} ${s.slice(20)}`],
    ['a tab inside the signature', (s: string) => `${s.slice(0, 20)}\t${s.slice(20)}`],
    ['standard base64 characters', (s: string) => s.replaceAll('-', '+').replaceAll('_', '/').replace(/^./, '+')],
  ])('refuses another spelling of a valid token: %s (401 token_invalid, cached or not)', async (_what, respell) => {
    const fresh = await mintToken(t, t.layoutId, t.apiKey);
    const [h, p, s] = fresh.split('.') as [string, string, string];
    const other = `${h}.${p}.${respell(s)}`;
    expect(other).not.toBe(fresh);
    for (let i = 0; i < 2; i++) {
      const r = await act({ lid: 1, type: 'Button' }, other);
      expect([r.status, r.body.error?.code]).toEqual([401, 'token_invalid']);
      expect((await act({ lid: 1, type: 'Button' }, fresh)).status).toBe(200); // the canonical one, then cached
    }
  });

  it('refuses a tampered token, even one carrying the signature of a cached token', async () => {
    expect((await act({ lid: 1, type: 'Button' }, token)).status).toBe(200); // its signature is now cached
    const [h, p, s] = token.split('.') as [string, string, string];
    const claims = JSON.parse(new TextDecoder().decode(base64url.decode(p))) as Record<string, unknown>;
    const forged = `${h}.${base64url.encode(JSON.stringify({ ...claims, layoutId: 'other' }))}.${s}`;
    const flipped = `${h}.${p}.${s.slice(0, -2)}${s.endsWith('AA') ? 'BB' : 'AA'}`;
    const reheadered = `${base64url.encode('{"alg":"HS256","typ":"audience+jwt"}')}.${p}.${s}`;
    for (const bad of [forged, reheadered, flipped, 'not.a.jwt', 'x', `${token}.`]) {
      const r = await act({ lid: 1, type: 'Button' }, bad);
      expect(r.status).toBe(401);
      expect(r.body.error.code).toBe('token_invalid');
    }
  });

  it('answers token_layout_mismatch when the body names another layout', async () => {
    const r = await postAction(t, token, { layoutId: 'another-show', lid: 1, type: 'Button' });
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('token_layout_mismatch');
  });

  it('answers token_expired once the clock passes exp, cached or not', async () => {
    const fresh = await mintToken(t, t.layoutId, t.apiKey);
    expect((await act({ lid: 1, type: 'Button' }, fresh)).status).toBe(200); // now cached
    const saved = clock;
    try {
      clock += 86_400_000 + 1000;
      const cached = await act({ lid: 1, type: 'Button' }, fresh);
      expect(cached.status).toBe(401);
      expect(cached.body.error.code).toBe('token_expired');
      const uncached = await act({ lid: 1, type: 'Button' }, await signWith('HS256', { ...goodClaims(), sub: 'aud_other' }));
      expect(uncached.body.error.code).toBe('token_expired');
    } finally {
      clock = saved;
    }
  });
});

describe('CORS on /action', () => {
  it('answers preflight from any origin by default', async () => {
    const r = await call(`${t.url}/action`, {
      method: 'OPTIONS',
      headers: { origin: 'https://fans.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
    });
    expect(r.status).toBe(204);
    expect(r.headers.get('access-control-allow-origin')).toBe('*');
    expect(r.headers.get('access-control-allow-methods')).toContain('POST');
    expect(r.headers.get('access-control-allow-headers')).toContain('authorization');
    expect(r.headers.get('x-request-id')).toBeTruthy();
  });

  it('carries Access-Control-Allow-Origin on answers, errors included', async () => {
    const okReply = await act({ lid: 1, type: 'Button' });
    expect(okReply.headers.get('access-control-allow-origin')).toBe('*');
    const err = await act({ lid: 99, type: 'Button' });
    expect(err.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('honours a configured allow-list', async () => {
    const limited = await startTestGateway({ redisUrl: redis.get().server.url, overrides: { corsOrigins: 'https://app.example, https://fans.example' } });
    try {
      const tok = await mintToken(limited, limited.layoutId, limited.apiKey);
      const pre = (origin: string) => call(`${limited.url}/action`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST' } });
      const allowed = await pre('https://fans.example');
      expect(allowed.status).toBe(204);
      expect(allowed.headers.get('access-control-allow-origin')).toBe('https://fans.example');
      expect(allowed.headers.get('vary')).toBe('Origin');
      const refused = await pre('https://evil.example');
      expect(refused.status).toBe(403);
      expect(refused.headers.get('access-control-allow-origin')).toBeNull();
      expect(refused.body.error.code).toBe('origin_not_allowed');
      const body = { layoutId: limited.layoutId, lid: 1, type: 'Button' };
      expect((await postAction(limited, tok, body, { origin: 'https://app.example' })).headers.get('access-control-allow-origin')).toBe('https://app.example');
      expect((await postAction(limited, tok, body, { origin: 'https://evil.example' })).headers.get('access-control-allow-origin')).toBeNull();
    } finally {
      await limited.close();
    }
  });
});
