// The client library obeys a refused upgrade's Retry-After where its WebSocket shows it (Node's
// `ws`): against a real gateway at its socket cap (503, Retry-After: 1), the next attempt comes
// no sooner than a second later, and it opens once there is room.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { LiveClient } from '../../client/live-client.js';
import { eventually, mintToken, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { connectLive, liveUrl } from '../helpers/live.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ redisUrl: redis.get().server.url, overrides: { liveMaxSockets: 1 } });
});
afterAll(() => t.close());

describe('a refused upgrade', () => {
  it('503 with Retry-After: 1 at the socket cap: the client tries again no sooner than a second later', async () => {
    const holder = await connectLive(t.url, await mintToken(t, t.layoutId, t.apiKey));
    const attempts: number[] = [];
    class Timed extends WebSocket {
      constructor(url: string, protocols: string[]) {
        super(url, protocols);
        attempts.push(Date.now());
      }
    }
    const c = new LiveClient({ url: liveUrl(t.url), token: await mintToken(t, t.layoutId, t.apiKey), WebSocket: Timed, baseDelayMs: 10, maxDelayMs: 20 });
    await eventually(() => attempts.length >= 1 && c.state === 'waiting');
    holder.ws.close();
    await eventually(() => c.state === 'open' && c.page !== null);
    // the retry after the 503 waits its second; a socket uWS drops right after an asynchronous
    // upgrade (1006, see docs/live.md) is reopened at once, so more attempts may follow it
    expect(attempts.length).toBeGreaterThanOrEqual(2);
    expect(attempts[1]! - attempts[0]!).toBeGreaterThanOrEqual(1000);
    c.stop();
  });
});
