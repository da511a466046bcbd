// A live socket's token over the socket's life, against a real gateway and Redis whose clock the
// test moves: `expiring` LIVE_EXPIRY_NOTICE_SECONDS before exp, then 4003 at exp; `refresh` with
// the same participant's renewed token keeps the socket past its first exp, acting; a token of
// another participant gets token_mismatch and the socket keeps its own.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLOSE } from '../../schemas/live-protocol.js';
import { createAjv } from '../../schemas/validators.js';
import { eventually, mintToken, postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { connectLive } from '../helpers/live.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
/** the gateway's clock runs this far ahead of the wall clock */
let ahead = 0;
let t: TestGateway;
beforeAll(async () => {
  // a 60 s token: inside the 60 s notice from its first moment
  t = await startTestGateway({ redisUrl: redis.get().server.url, now: () => Date.now() + ahead, overrides: { tokenTtlSeconds: 60 } });
});
afterAll(() => t.close());

const ajv = createAjv();
const serverFrame = (def: string, frame: unknown) => ajv.getSchema(`live-server-frames.schema.json#/$defs/${def}`)!(frame);
const renew = async (old: string) => {
  const r = await postJson(`${t.url}/token`, { layoutId: t.layoutId, renew: old }, { 'x-api-key': t.apiKey });
  expect(r.status).toBe(200);
  return r.body.token as string;
};

describe('a live socket and its token', () => {
  it('gets expiring within LIVE_EXPIRY_NOTICE_SECONDS of exp, once, and is closed with 4003 at exp', async () => {
    const token = await mintToken(t, t.layoutId, t.apiKey);
    const live = await connectLive(t.url, token);
    const expiring = await live.next('expiring', 0, 3000);
    expect(serverFrame('expiring', expiring)).toBe(true);
    const exp = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { exp: number };
    expect(expiring.expiresAt).toBe(exp.exp * 1000);
    ahead += 61_000;
    const closed = await live.closed;
    expect(closed).toEqual({ code: CLOSE.tokenExpired, reason: 'token_expired' });
    expect(live.frames.filter((f) => f.op === 'expiring')).toHaveLength(1);
  });

  it('takes the same participant\'s renewed token by refresh and keeps acting past the first token\'s exp', async () => {
    const first = await mintToken(t, t.layoutId, t.apiKey);
    const live = await connectLive(t.url, first);
    await live.next('expiring');
    ahead += 30_000;
    const second = await renew(first);
    const before = live.frames.length;
    live.send({ op: 'refresh', token: second });
    const refreshed = await live.next('refreshed', before);
    expect(serverFrame('refreshed', refreshed)).toBe(true);
    ahead += 40_000; // the first token has expired by now; the second has 20 s left
    await live.next('expiring', before); // the second token's notice: a check of every socket's expiry has run since
    const at = live.frames.length;
    live.send({ op: 'action', ref: 'after', lid: 2, type: 'Slider', value: 0.5 });
    expect(await live.next('ack', at)).toMatchObject({ ref: 'after' });
    const after = live.frames.slice(before);
    expect(after.findIndex((f) => f.op === 'expiring')).toBeGreaterThan(after.findIndex((f) => f.op === 'refreshed')); // the second token's own notice
    live.ws.close();
  });

  it('answers a refresh with another participant\'s token as token_mismatch (ref null); the socket keeps its own', async () => {
    const own = await mintToken(t, t.layoutId, t.apiKey);
    const live = await connectLive(t.url, own);
    const before = live.frames.length;
    live.send({ op: 'refresh', token: await mintToken(t, t.layoutId, t.apiKey) });
    const error = await live.next('error', before);
    expect(error).toMatchObject({ ref: null, error: { code: 'token_mismatch' } });
    live.send({ op: 'refresh', token: 'not.a.token' });
    await eventually(() => live.frames.slice(before).filter((f) => f.op === 'error').length === 2);
    expect(live.frames.slice(before).filter((f) => f.op === 'error')[1]).toMatchObject({ ref: null, error: { code: 'token_invalid' } });
    const at = live.frames.length;
    live.send({ op: 'action', ref: 'still', lid: 2, type: 'Slider', value: 0.1 });
    expect(await live.next('ack', at)).toMatchObject({ ref: 'still' });
    expect(live.frames.some((f) => f.op === 'refreshed')).toBe(false);
    live.ws.close();
  });
});
