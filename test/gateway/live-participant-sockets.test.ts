// One participant's live sockets, against a real gateway with the default per-participant limits:
// a token copied out of an app and opened 200 times in a burst keeps at most
// LIVE_SOCKETS_PER_PARTICIPANT sockets (a newer one replaces the oldest: 4009), its opens past
// LIVE_OPENS_PER_PARTICIPANT_PER_MINUTE get 429 with Retry-After before the upgrade, the process's
// own cap (503) is never reached, and other participants open and act as usual.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { CLOSE } from '../../schemas/live-protocol.js';
import { eventually, mintToken, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { attemptLive, connectLive, liveProtocols } from '../helpers/live.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
let t: TestGateway;
const MAX_SOCKETS = 60;
beforeAll(async () => {
  t = await startTestGateway({
    redisUrl: redis.get().server.url,
    // the defaults of a deployment for what this test is about, and a process cap the burst would pass
    overrides: { liveSocketsPerParticipant: 2, liveOpensPerParticipantPerMinute: 30, liveMaxSockets: MAX_SOCKETS },
  });
});
afterAll(() => t.close());

describe('one participant\'s sockets', () => {
  it('a burst of 200 opens with one token: at most the cap stay open, the excess is 429 with Retry-After, never 503, and others are served', async () => {
    const copied = await mintToken(t, t.layoutId, t.apiKey);
    const attempts = await Promise.all(Array.from({ length: 200 }, () => attemptLive(t.url, liveProtocols(copied))));
    const statuses = new Map<number, number>();
    for (const a of attempts) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
    console.log(`figure: 200 opens of one token: ${JSON.stringify(Object.fromEntries(statuses))}`);
    expect(statuses.get(503)).toBeUndefined();
    expect(statuses.get(101)).toBeLessThanOrEqual(30);
    expect((statuses.get(101) ?? 0) + (statuses.get(429) ?? 0)).toBe(200);
    for (const a of attempts.filter((x) => x.status === 429)) {
      expect(JSON.parse(a.body!).error.code).toBe('rate_limited');
      expect(Number(a.retryAfter)).toBeGreaterThanOrEqual(1);
    }
    const opened = attempts.filter((a) => a.ws).map((a) => a.ws!);
    await eventually(() => opened.filter((ws) => ws.readyState === WebSocket.OPEN).length <= 2);
    const codes = await Promise.all(opened.filter((ws) => ws.readyState !== WebSocket.OPEN).map((ws) => (ws.readyState === WebSocket.CLOSED ? Promise.resolve(-1) : new Promise<number>((r) => ws.once('close', (c) => r(c))))));
    // Every close is a replacement (4009). A 1006 is a socket uWS dropped right after its
    // asynchronous upgrade, which the gateway counts (uNetworking/uWebSockets#1928, docs/live.md).
    const lostAtUpgrade = Number(/audience_gateway_live_lost_at_upgrade_total (\d+)/.exec(await (await fetch(`http://127.0.0.1:${t.gw.opsPort}/metrics`)).text())?.[1] ?? 0);
    const dropped = codes.filter((c) => c === 1006).length;
    expect(codes.filter((c) => c !== -1 && c !== 1006).every((c) => c === CLOSE.replaced)).toBe(true);
    expect(dropped).toBeLessThanOrEqual(lostAtUpgrade);
    const open = opened.filter((ws) => ws.readyState === WebSocket.OPEN).length;
    expect(open).toBeLessThanOrEqual(2);
    expect(open).toBeGreaterThanOrEqual(2 - dropped);

    // another participant opens and acts as usual
    const other = await connectLive(t.url, await mintToken(t, t.layoutId, t.apiKey));
    const at = other.frames.length;
    other.send({ op: 'action', ref: 'ok', lid: 2, type: 'Slider', value: 0.3 });
    expect(await other.next('ack', at)).toMatchObject({ ref: 'ok' });
    other.ws.close();
    for (const ws of opened) ws.close();
  });

  it('a reconnect overlaps the socket it replaces: the second socket of a participant keeps the first open', async () => {
    const token = await mintToken(t, t.layoutId, t.apiKey);
    const first = await connectLive(t.url, token);
    const second = await connectLive(t.url, token);
    await new Promise((r) => setTimeout(r, 200));
    expect([first.ws.readyState, second.ws.readyState]).toEqual([WebSocket.OPEN, WebSocket.OPEN]);
    const third = await connectLive(t.url, token);
    expect((await first.closed).code).toBe(CLOSE.replaced);
    expect([second.ws.readyState, third.ws.readyState]).toEqual([WebSocket.OPEN, WebSocket.OPEN]);
    second.ws.close();
    third.ws.close();
  });
});
