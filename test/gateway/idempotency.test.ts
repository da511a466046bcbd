// Idempotency-Key on POST /action: a retry with the same key is answered 200 and appends nothing,
// so a client may retry after a 503 (which may have been appended after all); the same key with
// another body is 409; a key is scoped to the token's audience and layout, and expires.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeActionEntry } from '../../schemas/action-entry.js';
import { call, mintToken, postAction, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
let t: TestGateway;
let token: string;
beforeAll(async () => {
  t = await startTestGateway({ redisUrl: redis.get().server.url, overrides: { idempotencyTtlSeconds: 2 } });
  token = await mintToken(t, t.layoutId, t.apiKey);
});
afterAll(() => t.close());

const stream = () => t.gw.stores.keys.actions(t.layoutId);
const entriesWith = async (value: string) =>
  (await redis.get().client.xrange(stream(), '-', '+')).map(([, f]) => decodeActionEntry(f)).filter((d) => d.ok && d.entry.value === value).length;
const send = (value: string, key: string | null, tok = token) =>
  postAction(t, tok, { layoutId: t.layoutId, lid: 5, type: 'String', value }, key === null ? {} : { 'idempotency-key': key });

describe('Idempotency-Key', () => {
  it('a repeat of an appended action answers the same 200 and appends nothing', async () => {
    for (let i = 0; i < 3; i++) expect((await send('once', 'k-1')).body).toEqual({ success: true });
    expect(await entriesWith('once')).toBe(1);
  });

  it('ten concurrent repeats append once', async () => {
    const answers = await Promise.all(Array.from({ length: 10 }, () => send('concurrent', 'k-2')));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    expect(await entriesWith('concurrent')).toBe(1);
  });

  it('the same key with another body is 409 idempotency_key_reused, and appends nothing', async () => {
    expect((await send('first body', 'k-3')).status).toBe(200);
    const r = await send('second body', 'k-3');
    expect([r.status, r.body.error.code]).toEqual([409, 'idempotency_key_reused']);
    expect(await entriesWith('second body')).toBe(0);
  });

  it('is scoped to the token’s audience: another token may use the same key', async () => {
    const other = await mintToken(t, t.layoutId, t.apiKey);
    expect((await send('scoped', 'k-4')).status).toBe(200);
    expect((await send('scoped', 'k-4', other)).status).toBe(200);
    expect(await entriesWith('scoped')).toBe(2);
  });

  it.each([['x'.repeat(65)], ['with space'], ['a/b'], ['a,b'], ['{key}']])('refuses the key %j with 400 idempotency_key_invalid', async (key) => {
    const r = await call(`${t.url}/action`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'idempotency-key': key },
      body: JSON.stringify({ layoutId: t.layoutId, lid: 5, type: 'String', value: `bad-key-${key.length}` }),
    });
    expect([r.status, r.body.error.code]).toEqual([400, 'idempotency_key_invalid']);
  });

  it('an empty header counts as absent (uWS reads an empty header as no header)', async () => {
    for (let i = 0; i < 2; i++) expect((await send('empty key', '')).status).toBe(200);
    expect(await entriesWith('empty key')).toBe(2);
  });

  it('accepts every allowed character and 64 of them', async () => {
    expect((await send('charset', 'AZaz09._:-')).status).toBe(200);
    expect((await send('long', 'k'.repeat(64))).status).toBe(200);
  });

  it('without the header every request appends, as before', async () => {
    for (let i = 0; i < 3; i++) expect((await send('plain', null)).status).toBe(200);
    expect(await entriesWith('plain')).toBe(3);
  });

  it('expires after IDEMPOTENCY_TTL_SECONDS: then the same key appends again', async () => {
    expect((await send('expiring', 'k-5')).status).toBe(200);
    await new Promise((r) => setTimeout(r, 2100));
    expect((await send('expiring', 'k-5')).status).toBe(200);
    expect(await entriesWith('expiring')).toBe(2);
  });

  it('makes the README’s retry safe: a 503 during a Redis stall that did append, retried with its key, is played once', async () => {
    const c = new Redis(redis.get().server.url);
    try {
      await c.call('CLIENT', 'PAUSE', '1000', 'WRITE'); // writes wait; the gateway gives up after 400 ms
      const first = await send('stalled', 'k-6');
      expect(first.status).toBe(503);
      await new Promise((r) => setTimeout(r, 800)); // the paused append goes through
      expect(await entriesWith('stalled')).toBe(1);
      const retry = await send('stalled', 'k-6');
      expect(retry.status).toBe(200);
      expect(await entriesWith('stalled')).toBe(1);
    } finally {
      c.disconnect();
    }
  });

  it('CORS preflight allows the header', async () => {
    const r = await fetch(`${t.url}/action`, { method: 'OPTIONS', headers: { origin: 'https://app.example', 'access-control-request-headers': 'idempotency-key' } });
    expect(r.headers.get('access-control-allow-headers')).toContain('idempotency-key');
  });
});
