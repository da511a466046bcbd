// The client library against a real gateway (the `ws` package as its WebSocket, as in Node): the
// page as state and events, send() resolved by the ack and rejected with the API's code, a page
// switch, a revoked token refreshed through the callback, a layout gone stopping it; and the
// backoff curve (full jitter, capped).
import { connect, createServer, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { LiveClient, LiveError, reconnectDelay } from '../../client/live-client.js';
import { eventually, mintToken, postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { CROWD_LAYOUT } from '../helpers/crowd.js';
import { liveUrl } from '../helpers/live.js';
import { useRedis } from '../helpers/redis.js';
import { CLOSE } from '../../schemas/live-protocol.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { seededRandom } from '../helpers/seeded-random.js';

const redis = useRedis();
let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ redisUrl: redis.get().server.url });
});
afterAll(() => t.close());

const client = (token: string, more: Partial<ConstructorParameters<typeof LiveClient>[0]> = {}) =>
  new LiveClient({ url: liveUrl(t.url), token, WebSocket: WebSocket, baseDelayMs: 50, ...more });

describe('LiveClient', () => {
  it('keeps the page as state, resolves send() on the ack, rejects a refused action with its code, and follows a page switch', async () => {
    const c = client(await mintToken(t, t.layoutId, t.apiKey));
    const pages: string[] = [];
    c.on('page', (p) => pages.push(p.activePageId));
    await eventually(() => c.page !== null);
    expect(c.state).toBe('open');
    expect(c.page!.controls.map((x) => x.lid)).toEqual([1, 2, 3, 4, 5, 6]);
    await c.send({ lid: 5, type: 'String', value: 'from the client library' });
    await expect(c.send({ lid: 2, type: 'Slider', value: 7 })).rejects.toMatchObject({ code: 'invalid_value' });
    await t.admin.layouts.activate(t.layoutId, 'encore');
    await eventually(() => c.page?.activePageId === 'encore');
    await expect(c.send({ lid: 5, type: 'String', value: 'gone' })).rejects.toBeInstanceOf(LiveError); // not on the live page
    await t.admin.layouts.activate(t.layoutId, 'main');
    await eventually(() => pages.at(-1) === 'main');
    c.stop();
    await expect(c.send({ lid: 1, type: 'Button' })).rejects.toMatchObject({ code: 'stopped' });
  });

  it('asks for a new token when the gateway revokes this one (4001) and carries on with it', async () => {
    const key = await t.admin.apiKeys.create(t.teamId, { name: 'client test' });
    let refreshed = 0;
    const c = client(await mintToken(t, t.layoutId, key.apiKey), {
      refreshToken: async () => {
        refreshed++;
        return mintToken(t, t.layoutId, t.apiKey);
      },
    });
    await eventually(() => c.state === 'open' && c.page !== null);
    const closes: number[] = [];
    c.on('closed', (e) => closes.push(e.code));
    await t.admin.apiKeys.revoke(key.keyId);
    await eventually(() => refreshed === 1 && c.state === 'open');
    // One close, 4001. (A further 1006 is a socket uWS dropped right after an asynchronous upgrade,
    // which the gateway counts, and the client reconnected; see docs/live.md.)
    const lostAtUpgrade = Number(/audience_gateway_live_lost_at_upgrade_total (\d+)/.exec(await (await fetch(`http://127.0.0.1:${t.gw.opsPort}/metrics`)).text())?.[1] ?? 0);
    expect(closes.filter((code) => code !== 1006)).toEqual([4001]);
    expect(closes.length - 1).toBeLessThanOrEqual(lostAtUpgrade);
    await c.send({ lid: 1, type: 'Button' });
    c.stop();
  });

  it('stops as unauthorized on 4001 without a refresh callback; after a gateway stops it keeps reconnecting, and an unanswered action times out', async () => {
    const key = await t.admin.apiKeys.create(t.teamId, { name: 'no refresh' });
    const c = client(await mintToken(t, t.layoutId, key.apiKey));
    await eventually(() => c.state === 'open');
    const told: number[] = [];
    c.on('unauthorized', (e) => told.push(e.code));
    await t.admin.apiKeys.revoke(key.keyId);
    await eventually(() => c.state === 'unauthorized');
    expect(told).toEqual([CLOSE.tokenInvalid]);
    // a gateway that stops (1012): the client keeps trying, and an action waits for its ack until the timeout
    const other = await startTestGateway({ redisUrl: redis.get().server.url, sameDataAs: t });
    const d = new LiveClient({ url: liveUrl(other.url), token: await mintToken(t, t.layoutId, t.apiKey), WebSocket: WebSocket, baseDelayMs: 50, maxDelayMs: 200, ackTimeoutMs: 1000, maxFailedOpens: 1000 });
    await eventually(() => d.state === 'open');
    const states: string[] = [];
    d.on('state', (s) => states.push(s));
    await other.close();
    await expect(d.send({ lid: 5, type: 'String', value: 'nobody listens' })).rejects.toMatchObject({ code: 'timeout' });
    expect(states.filter((s) => s === 'connecting').length).toBeGreaterThanOrEqual(2); // it kept trying
    d.stop();
  });

  it('keeps a socket whose answer came while the page itself stalled past the heartbeat deadline: the answer is read before the socket is judged', async () => {
    const c = client(await mintToken(t, t.layoutId, t.apiKey), { heartbeatIdleMs: 200, heartbeatDeadMs: 300 });
    await eventually(() => c.state === 'open' && c.page !== null);
    const closes: number[] = [];
    c.on('closed', (e) => closes.push(e.code));
    const states: string[] = [];
    c.on('state', (s) => states.push(s));
    for (let round = 0; round < 3; round++) {
      const acked = c.send({ lid: 1, type: 'Button' });
      // the page's thread busy (a long task, a GC, a throttled tab) past the deadline; the gateway
      // (in this process) answers as soon as the loop turns, as would a gateway elsewhere
      const until = Date.now() + 600;
      while (Date.now() < until);
      await acked;
      await new Promise((r) => setTimeout(r, 150));
    }
    expect(states, 'no reconnect').toEqual([]);
    expect(closes).toEqual([]);
    c.stop();
  });
  it('keeps a new socket when an action sent while the link was down times out just after it opened: only a socket that heard nothing for heartbeatDeadMs is left', async () => {
    // A second each way: the socket opens two seconds after the link returns, and the resent action's
    // ack comes two seconds after the open. The timeout falls between them, a second from each, so
    // that a test process slowed by its neighbours still sees the order it names.
    const latencyMs = 1000;
    const ackTimeoutMs = 4000;
    const restoreAfterMs = ackTimeoutMs - 3 * latencyMs;
    const proxy = new FaultProxy({ targets: () => [t.gw.port], up: { latencyMs }, down: { latencyMs } });
    await proxy.start();
    const c = new LiveClient({ url: `ws://127.0.0.1:${proxy.port}/live`, token: await mintToken(t, t.layoutId, t.apiKey), WebSocket: WebSocket, baseDelayMs: 50, maxDelayMs: 100, ackTimeoutMs, maxFailedOpens: 1000 });
    try {
      await eventually(() => c.state === 'open' && c.page !== null);
      proxy.cut();
      await eventually(() => c.state !== 'open');
      const sentAt = Date.now();
      const outcome = c.send({ lid: 5, type: 'String', value: 'sent while the link was down' }).then(
        () => ({ settledAt: Date.now(), error: null }),
        (error: unknown) => ({ settledAt: Date.now(), error }),
      );
      await new Promise((r) => setTimeout(r, restoreAfterMs));
      const events: string[] = [];
      let openedAt = 0;
      c.on('state', (s) => {
        events.push(s);
        if (s === 'open' && openedAt === 0) openedAt = Date.now();
      });
      c.on('closed', (e) => events.push(`closed ${e.code} ${e.reason}`));
      proxy.restore();
      const { settledAt, error } = await outcome;
      expect(error).toMatchObject({ code: 'timeout' });
      expect(openedAt, 'the socket opened before the timeout').toBeGreaterThan(0);
      expect(openedAt - sentAt, 'the socket opened before the timeout').toBeLessThan(settledAt - sentAt);
      await new Promise((r) => setTimeout(r, 2 * latencyMs + 500)); // the resend's ack, a time exchange: the socket answers
      expect(events.filter((e) => e !== 'connecting' && e !== 'waiting'), 'the socket that opened is kept').toEqual(['open']);
      expect(c.state).toBe('open');
    } finally {
      c.stop();
      await proxy.stop();
    }
  });
});

/**
 * A TCP hop in front of the gateway that plays each connection as `fate(n)` says (n counts from 0):
 * `refuse` resets it at once (a failed open); `drop` passes the upgrade's 101 and nothing after it,
 * then closes (a socket lost right after its open, as uWS loses one now and then); `pass` relays it.
 */
async function upgradeHop(fate: (n: number) => 'refuse' | 'drop' | 'pass'): Promise<{ url: string; connections: () => number; close: () => Promise<void> }> {
  let n = 0;
  const open = new Set<Socket>();
  const server = createServer((phone) => {
    open.add(phone);
    phone.on('close', () => open.delete(phone));
    phone.on('error', () => {});
    const what = fate(n++);
    if (what === 'refuse') return void phone.resetAndDestroy();
    const gateway = connect(t.gw.port, '127.0.0.1');
    open.add(gateway);
    gateway.on('close', () => open.delete(gateway));
    gateway.on('error', () => phone.destroy());
    phone.pipe(gateway);
    if (what === 'pass') return void gateway.pipe(phone);
    let head = '';
    gateway.on('data', (d: Buffer) => {
      head += d.toString('latin1');
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      phone.end(Buffer.from(head.slice(0, end + 4), 'latin1')); // the 101, then FIN: no frame, no close frame
      gateway.destroy();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    url: `ws://127.0.0.1:${port}/live`,
    connections: () => n,
    close: async () => {
      for (const s of open) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

describe('LiveClient after a socket lost right after its open', () => {
  // full jitter at its middle: the delay before attempt k is 10 ms * 2^k, up to 2.5 s
  const backoff = { baseDelayMs: 20, maxDelayMs: 5000, random: () => 0.5, maxFailedOpens: 1000 };

  it('tries again at once, not after the backoff of the outage before it, and is on the page', async () => {
    // 8 failed opens (10 ms to 1.28 s apart), then a socket dropped right after its 101, then the gateway
    const hop = await upgradeHop((n) => (n < 8 ? 'refuse' : n === 8 ? 'drop' : 'pass'));
    const c = new LiveClient({ url: hop.url, token: await mintToken(t, t.layoutId, t.apiKey), WebSocket: WebSocket, ...backoff });
    try {
      const events: [number, string][] = [];
      c.on('state', (s) => events.push([Date.now(), s]));
      c.on('closed', (e) => events.push([Date.now(), `closed ${e.code}`]));
      await eventually(() => c.state === 'open' && c.page !== null, 15_000);
      expect(hop.connections()).toBe(10);
      const dropped = events.findIndex(([, e], i) => e === 'closed 1006' && events[i - 1]?.[1] === 'open');
      expect(dropped, 'a socket opened and was dropped').toBeGreaterThan(0);
      const retried = events.slice(dropped).find(([, e]) => e === 'connecting')!;
      // the backoff after 8 failed opens would wait 2.5 s; at once is 10 ms
      expect(retried[0] - events[dropped]![0]).toBeLessThan(500);
    } finally {
      c.stop();
      await hop.close();
    }
  });

  it('does so once until a page comes: a gateway that drops every socket at its open is tried at the backoff\'s pace', async () => {
    const hop = await upgradeHop(() => 'drop');
    const c = new LiveClient({ url: hop.url, token: await mintToken(t, t.layoutId, t.apiKey), WebSocket: WebSocket, ...backoff });
    try {
      await new Promise((r) => setTimeout(r, 1500));
      // delays of 10, 20, 40, ... 640 ms: 8 opens in 1.5 s (every one at once would be a hundred or more)
      expect(hop.connections()).toBeGreaterThanOrEqual(5);
      expect(hop.connections()).toBeLessThanOrEqual(10);
    } finally {
      c.stop();
      await hop.close();
    }
  });
});

describe('LiveClient state for late listeners', () => {
  it('replays the current page and crowd values to a listener added after they came', async () => {
    const crowdLayout = { ...CROWD_LAYOUT, layoutId: 'late-listeners' };
    await t.admin.layouts.import(t.teamId, crowdLayout);
    const token = (await postJson(`${t.url}/token`, { layoutId: crowdLayout.layoutId }, { 'x-api-key': t.apiKey })).body.token as string;
    const c = client(token);
    await eventually(() => c.page !== null);
    await c.send({ lid: 2, type: 'Slider', value: 0.75 });
    await eventually(() => c.crowd.get(2)?.value === 0.75);
    const pages: string[] = [];
    const crowds: number[] = [];
    c.on('page', (p) => pages.push(p.layoutId));
    c.on('crowd', (v) => crowds.push(v.lid));
    await new Promise((r) => setTimeout(r, 20));
    expect(pages).toEqual(['late-listeners']);
    expect(crowds).toContain(2);
    c.stop();
  });
});

describe('reconnectDelay', () => {
  it('is full jitter: uniform below min(max, base * 2^attempt)', () => {
    const random = seededRandom(7);
    for (let attempt = 0; attempt < 12; attempt++) {
      const cap = Math.min(30_000, 250 * 2 ** attempt);
      const delays = Array.from({ length: 200 }, () => reconnectDelay(attempt, 250, 30_000, random));
      expect(Math.min(...delays)).toBeGreaterThanOrEqual(0);
      expect(Math.max(...delays)).toBeLessThan(cap);
      expect(Math.max(...delays)).toBeGreaterThan(cap * 0.8); // spread over the whole range, not bunched
    }
  });
});
