// A live socket's token over the socket's life, against a real gateway and Redis whose clock the
// test moves: `expiring` LIVE_EXPIRY_NOTICE_SECONDS before exp, then 4003 at exp; `refresh` with
// the same participant's renewed token keeps the socket past its first exp, acting; a token of
// another participant gets token_mismatch and the socket keeps its own.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLOSE, FRAME_LIMITS } from '../../schemas/live-protocol.js';
import { FLOOD_CLOSE_AFTER } from '../../gateway/live/channel.js';
import { createAjv } from '../../schemas/ajv.js';
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

describe('refresh frames are budgeted', () => {
  /** a token of this layout with its signature changed: never cached, so every check of it is a verify */
  const forged = (token: string) => `${token.slice(0, token.lastIndexOf('.') + 1)}${'A'.repeat(43)}`;

  it('a flood of refreshes with bad signatures gets one check at a time, within the socket\'s budget, and closes with 4029', async () => {
    const token = await mintToken(t, t.layoutId, t.apiKey);
    const live = await connectLive(t.url, token);
    const before = live.frames.length;
    const bad = forged(token);
    for (let i = 0; i < 200; i++) live.send({ op: 'refresh', token: bad });
    const closed = await live.closed;
    expect(closed.code).toBe(CLOSE.flooding);
    const errors = live.frames.slice(before).filter((f) => f.op === 'error') as unknown as { error: { code: string } }[];
    const checked = errors.filter((e) => e.error.code === 'token_invalid').length;
    // the frames come faster than a check answers: the first is checked (its answer may come after
    // the close), the rest are refused before any check
    expect(checked).toBeLessThanOrEqual(FRAME_LIMITS.refresh.socketBurst);
    expect(errors.filter((e) => e.error.code === 'rate_limited').length).toBeGreaterThanOrEqual(FLOOD_CLOSE_AFTER - FRAME_LIMITS.refresh.socketBurst);
    expect(errors.every((e) => e.error.code === 'token_invalid' || e.error.code === 'rate_limited')).toBe(true);
    expect(errors.length).toBeLessThanOrEqual(FLOOD_CLOSE_AFTER + FRAME_LIMITS.refresh.socketBurst);
  });

  it('a participant\'s refreshes share one budget over its sockets; a refused one leaves the socket acting on its token', async () => {
    const first = await mintToken(t, t.layoutId, t.apiKey);
    const second = await renew(first);
    const sockets = [];
    for (let i = 0; i < 2; i++) sockets.push(await connectLive(t.url, first)); // LIVE_SOCKETS_PER_PARTICIPANT's default
    const codes: string[] = [];
    // one at a time, each answered before the next: never two in flight
    for (let i = 0; i < FRAME_LIMITS.refresh.participantBurst + 1; i++) {
      const live = sockets[i % sockets.length]!;
      const at = live.frames.length;
      live.send({ op: 'refresh', token: second });
      await eventually(() => live.frames.slice(at).some((f) => f.op === 'refreshed' || f.op === 'error'));
      const answer = live.frames.slice(at).find((f) => f.op === 'refreshed' || f.op === 'error')!;
      codes.push(answer.op === 'refreshed' ? 'refreshed' : (answer as unknown as { error: { code: string } }).error.code);
    }
    expect(codes.slice(0, FRAME_LIMITS.refresh.participantBurst).every((c) => c === 'refreshed')).toBe(true);
    expect(codes.at(-1)).toBe('rate_limited');
    const live = sockets.at(-1)!;
    const at = live.frames.length;
    live.send({ op: 'action', ref: 'after', lid: 2, type: 'Slider', value: 0.5 });
    expect(await live.next('ack', at)).toMatchObject({ ref: 'after' });
    for (const s of sockets) s.ws.close();
  });
});
