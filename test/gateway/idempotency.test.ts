// Idempotency-Key on POST /action: a retry with the same key is answered 200 and appends nothing,
// so a client may retry after a 503 (which may have been appended after all); the same key with
// another body is 409; a key is scoped to the token's audience and layout, is remembered for one to
// two windows, and one participant may use only so many keys a window. A header that is not plainly
// the allowed characters is 400, never trimmed into another key.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeActionEntry } from '../../schemas/action-entry.js';
import { call, eventually, mintToken, postAction, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { raw } from '../helpers/raw-http.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
let t: TestGateway;
let token: string;
beforeAll(async () => {
  t = await startTestGateway({ redisUrl: redis.get().server.url, overrides: { idempotencyTtlSeconds: 2, idempotencyKeysPerParticipant: 200 } });
  token = await mintToken(t, t.layoutId, t.apiKey);
});
afterAll(() => t.close());

const stream = () => t.gw.stores.keys.actions(t.layoutId);
/** The stream's entries whose value is `value`. */
const entriesOf = async (value: string) =>
  (await redis.get().client.xrange(stream(), '-', '+')).map(([, f]) => decodeActionEntry(f)).flatMap((d) => (d.ok && d.entry.value === value ? [d.entry] : []));
const entriesWith = async (value: string) => (await entriesOf(value)).length;
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

  it('an empty header is 400 idempotency_key_invalid, and appends nothing', async () => {
    const r = await send('empty key', '');
    expect([r.status, r.body.error.code]).toEqual([400, 'idempotency_key_invalid']);
    expect(await entriesWith('empty key')).toBe(0);
  });

  /** One POST /action with the Idempotency-Key's raw bytes, on its own connection. */
  const rawSend = async (value: string, keyBytes: Buffer) => {
    const body = JSON.stringify({ layoutId: t.layoutId, lid: 5, type: 'String', value });
    const head = `POST /action HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer ${token}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nIdempotency-Key: `;
    const answer = await raw(t.gw.port, [Buffer.concat([Buffer.from(head), keyBytes, Buffer.from(`\r\n\r\n${body}`)])], 300);
    return answer.text.split('\r\n')[0];
  };

  it('a key of bytes outside ASCII (which the server would trim to nothing) is 400, never taken as no key', async () => {
    for (let i = 0; i < 2; i++) expect(await rawSend('non-ascii key', Buffer.from('кл'))).toBe('HTTP/1.1 400 Bad Request');
    expect(await entriesWith('non-ascii key')).toBe(0);
  });

  it('a key with bytes outside ASCII inside it is 400', async () => {
    expect(await rawSend('inner non-ascii', Buffer.from('aклb'))).toBe('HTTP/1.1 400 Bad Request');
    expect(await entriesWith('inner non-ascii')).toBe(0);
  });

  it('accepts every allowed character and 64 of them', async () => {
    expect((await send('charset', 'AZaz09._:-')).status).toBe(200);
    expect((await send('long', 'k'.repeat(64))).status).toBe(200);
  });

  it('without the header every request appends, as before', async () => {
    for (let i = 0; i < 3; i++) expect((await send('plain', null)).status).toBe(200);
    expect(await entriesWith('plain')).toBe(3);
  });

  it('is remembered at least IDEMPOTENCY_TTL_SECONDS and at most twice that: then the same key appends again', async () => {
    // Timed from the gateway's own stamp of the first action (its entry's ts), not from when the
    // test sent it: a loaded machine delays requests, and a repeat answered only after the TTL
    // proves nothing about it, so that try is made again with a new key.
    const sleepUntil = (at: number) => new Promise((r) => setTimeout(r, Math.max(0, at - Date.now())));
    for (let attempt = 1; ; attempt++) {
      const [value, key] = [`expiring-${attempt}`, `k-5-${attempt}`];
      expect((await send(value, key)).status).toBe(200);
      const t1 = (await entriesOf(value))[0]?.ts ?? NaN;
      expect(t1).toBeGreaterThan(0); // the first is in the stream, stamped
      await sleepUntil(t1 + 1800);
      expect((await send(value, key)).status).toBe(200);
      if (Date.now() < t1 + 2000) {
        // answered within the TTL of the first, so taken within it too: remembered
        expect(await entriesWith(value)).toBe(1);
        await sleepUntil(t1 + 4050);
        expect((await send(value, key)).status).toBe(200);
        expect(await entriesWith(value)).toBe(2);
        return;
      }
      expect(attempt, 'every repeat was answered after the TTL: this machine is too slow to tell').toBeLessThan(3);
    }
  });

  it('makes the README’s retry safe: a 503 during a Redis stall that did append, retried with its key, is played once', async () => {
    const c = new Redis(redis.get().server.url);
    try {
      await c.call('CLIENT', 'PAUSE', '1000', 'WRITE'); // writes wait; the gateway gives up after 400 ms
      const first = await send('stalled', 'k-6');
      expect(first.status).toBe(503);
      await eventually(async () => (await entriesWith('stalled')) >= 1); // the paused append goes through
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

describe('what one participant can make Redis hold', () => {
  const WINDOW_SECONDS = 60;
  /** the number of the window (idempotencyTtlSeconds long, counted from the epoch) that holds now */
  const windowNow = () => Math.floor(Date.now() / (WINDOW_SECONDS * 1000));
  let small: TestGateway;
  beforeAll(async () => {
    small = await startTestGateway({ redisUrl: redis.get().server.url, overrides: { idempotencyTtlSeconds: WINDOW_SECONDS, idempotencyKeysPerParticipant: 100 } });
  });
  afterAll(() => small.close());
  const sendTo = (tok: string, value: string, key: string) => postAction(small, tok, { layoutId: small.layoutId, lid: 2, type: 'Slider', value: Number(value) }, { 'idempotency-key': key });

  it('a participant past its keys for the window gets 429 rate_limited with Retry-After; repeats and other participants still work', async () => {
    // the cap counts again in the next window, so the 101st key is judged in the window of the
    // first; if a loaded machine crossed a boundary, a new participant tries again
    let mine = '';
    let over: Awaited<ReturnType<typeof sendTo>> | undefined;
    for (let attempt = 0; attempt < 3 && !over; attempt++) {
      const first = windowNow();
      mine = await mintToken(small, small.layoutId, small.apiKey);
      for (let i = 0; i < 100; i++) expect((await sendTo(mine, '0.5', `cap-${i}`)).status).toBe(200);
      const answer = await sendTo(mine, '0.5', 'cap-100');
      if (windowNow() === first) over = answer;
    }
    if (!over) throw new Error('three attempts each crossed a window boundary');
    expect([over.status, over.body.error.code]).toEqual([429, 'rate_limited']);
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(over.headers.get('retry-after'))).toBeLessThanOrEqual(WINDOW_SECONDS);
    expect((await sendTo(mine, '0.5', 'cap-7')).status).toBe(200); // a retry of a remembered key
    const other = await mintToken(small, small.layoutId, small.apiKey);
    expect((await sendTo(other, '0.5', 'cap-100')).status).toBe(200);
  });

  it('stores a record compactly: one hash per participant and window', async () => {
    const mine = await mintToken(small, small.layoutId, small.apiKey);
    const client = redis.get().client;
    const hashes = async () => {
      const found: string[] = [];
      let cursor = '0';
      do {
        const [next, keys] = await client.scan(cursor, 'MATCH', `${small.config.redisPrefix}layout:*:once:*`, 'COUNT', 1000);
        cursor = next;
        found.push(...keys);
      } while (cursor !== '0');
      return found;
    };
    const before = new Set(await hashes());
    // a loaded machine's 100 requests may cross into the next window
    const first = windowNow();
    for (let i = 0; i < 100; i++) expect((await sendTo(mine, '0.25', `u-${i.toString(36)}-${'x'.repeat(20)}`)).status).toBe(200);
    const last = windowNow();
    const added = (await hashes()).filter((k) => !before.has(k));
    // one hash per window the requests fell in, named by the window's number
    expect(added.map((k) => Number(k.slice(k.lastIndexOf(':') + 1))).sort()).toEqual(last === first ? [first] : [first, last]);
    expect((await Promise.all(added.map((k) => client.hlen(k)))).reduce((a, b) => a + b, 0)).toBe(100);
    const bytes = (await Promise.all(added.map((k) => client.call('MEMORY', 'USAGE', k, 'SAMPLES', '0')))).reduce((a: number, b) => a + Number(b), 0);
    const ttl = await client.pttl(added.find((k) => k.endsWith(`:${last}`))!);
    console.log(`figure: 100 Idempotency-Key records of 25 characters: ${bytes} bytes in Redis (${(bytes / 100).toFixed(1)} per record) in ${added.length} hash(es), expiring in ${ttl} ms`);
    expect(bytes / 100).toBeLessThan(80);
    expect(ttl).toBeGreaterThan(WINDOW_SECONDS * 1000);
    expect(ttl).toBeLessThanOrEqual(2 * WINDOW_SECONDS * 1000);
  });
});
