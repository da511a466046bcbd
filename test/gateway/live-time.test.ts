// The live channel's clock: a `time` frame is answered with when the server received it and sent
// the answer, in Redis's clock, whichever gateway process answers (one of them here with its host
// clock 5 s ahead, libfaketime); each socket's exchanges have a budget past which they get an error
// and the socket stays open; the client library's serverNow() is Redis's time within the
// uncertainty it states, also after its socket moved to the process whose clock is off.
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { LiveClient } from '../../client/live-client.js';
import { ServerClock } from '../../client/server-clock.js';
import { FRAME_LIMITS } from '../../schemas/live-protocol.js';
import { createAjv } from '../../schemas/ajv.js';
import { spawnGateway, seedLayout, type GatewayProcess } from '../helpers/gateway-process.js';
import { DEMO_LAYOUT, eventually, mintToken } from '../helpers/gateway.js';
import { connectLive, type LiveClient as TestSocket } from '../helpers/live.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';

const redis = useRedis();
const ajv = createAjv();
const timeAnswer = ajv.getSchema('live-server-frames.schema.json#/$defs/time')!;
let plain: Redis;
let apiKey = '';
let prefix = '';
let normal: GatewayProcess;
let ahead: GatewayProcess;
/** libfaketime preloaded into node: this process's clock runs 5 s ahead of the host's */
const FIVE_SECONDS_AHEAD = { LD_PRELOAD: '/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1', FAKETIME: '+5s' };

beforeAll(async () => {
  prefix = randomPrefix();
  const seeded = await seedLayout(redis.get().server.url, prefix, DEMO_LAYOUT);
  apiKey = seeded.apiKey;
  seeded.admin.disconnect();
  plain = new Redis(redis.get().server.url);
  const env = { REDIS_URL: redis.get().server.url, REDIS_PREFIX: prefix };
  normal = await spawnGateway(env);
  ahead = await spawnGateway({ ...env, ...FIVE_SECONDS_AHEAD });
}, 60_000);
afterAll(() => {
  for (const g of [normal, ahead]) g?.child.kill('SIGKILL');
  plain?.disconnect();
});

/** Redis's clock, read by the test (ms). */
async function redisNow(): Promise<number> {
  const [s, us] = await plain.time();
  return Number(s) * 1000 + Number(us) / 1000;
}

/** `n` exchanges on a raw socket, one after another, into a clock of the test's own (this host's clock). */
async function exchanges(s: TestSocket, n: number, clock = new ServerClock()): Promise<ServerClock> {
  for (let i = 0; i < n; i++) {
    const ref = `x${i}-${Math.random()}`;
    const t0 = clock.local();
    s.send({ op: 'time', ref });
    await eventually(() => s.frames.some((f) => f.ref === ref), 5000);
    const answer = s.frames.find((f) => f.ref === ref)!;
    expect(answer.op, JSON.stringify(answer)).toBe('time');
    expect(timeAnswer(answer), JSON.stringify(timeAnswer.errors)).toBe(true);
    clock.add(t0, answer.receivedAt as number, answer.sentAt as number, clock.local());
  }
  return clock;
}

describe('the live channel\'s clock (time)', () => {
  it("answers in Redis's clock: the server's receive and send times lie between the test's readings of Redis TIME before and after", async () => {
    const s = await connectLive(normal.url, await mintToken(normal, DEMO_LAYOUT.layoutId, apiKey));
    for (let i = 0; i < 5; i++) {
      const before = await redisNow();
      const ref = `r${i}`;
      s.send({ op: 'time', ref });
      await eventually(() => s.frames.some((f) => f.ref === ref), 5000);
      const after = await redisNow();
      const a = s.frames.find((f) => f.ref === ref)!;
      expect(timeAnswer(a), JSON.stringify(timeAnswer.errors)).toBe(true);
      const [receivedAt, sentAt] = [a.receivedAt as number, a.sentAt as number];
      expect(sentAt).toBeGreaterThanOrEqual(receivedAt);
      // the gateway's estimate of Redis's clock is right within half its best TIME round trip (well under 2 ms on loopback)
      expect(receivedAt).toBeGreaterThan(before - 2);
      expect(sentAt).toBeLessThan(after + 2);
    }
    s.ws.close();
  });

  it('one timebase across processes: a process whose host clock is 5 s ahead answers as the other does', async () => {
    const [a, b] = await Promise.all([normal, ahead].map(async (g) => connectLive(g.url, await mintToken(g, DEMO_LAYOUT.layoutId, apiKey))));
    const [ca, cb] = [await exchanges(a!, 6), await exchanges(b!, 6)];
    const gap = Math.abs(ca.best()!.offsetMs - cb.best()!.offsetMs);
    // the two estimates, each within its uncertainty, and each process within its own accuracy of Redis's clock
    expect(gap, `offsets ${ca.best()!.offsetMs} and ${cb.best()!.offsetMs}`).toBeLessThan(ca.uncertaintyMs() + cb.uncertaintyMs() + 4);
    const viaRedis = (await redisNow()) - Date.now();
    expect(Math.abs(cb.best()!.offsetMs - viaRedis)).toBeLessThan(cb.uncertaintyMs() + 4);
    a!.ws.close();
    b!.ws.close();
  });

  it("a device whose clock is 3 s behind estimates an offset of 3 s, and its server time is Redis's", async () => {
    const s = await connectLive(ahead.url, await mintToken(ahead, DEMO_LAYOUT.layoutId, apiKey));
    const behind = await exchanges(s, 6, new ServerClock(() => performance.timeOrigin + performance.now() - 3000));
    expect(Math.abs(behind.best()!.offsetMs - 3000)).toBeLessThan(behind.uncertaintyMs() + 4);
    const before = await redisNow();
    const estimate = behind.now();
    const after = await redisNow();
    expect(estimate).toBeGreaterThan(before - behind.uncertaintyMs() - 4);
    expect(estimate).toBeLessThan(after + behind.uncertaintyMs() + 4);
    s.ws.close();
  });

  it('past the socket\'s budget an exchange gets an error rate_limited with its ref and retryAfterMs; the socket stays open, and its other frames are answered', async () => {
    const s = await connectLive(normal.url, await mintToken(normal, DEMO_LAYOUT.layoutId, apiKey));
    const sent = FRAME_LIMITS.time.socketBurst + 70; // past the flood close's 50 refusals in a row, had they counted
    for (let i = 0; i < sent; i++) s.send({ op: 'time', ref: `b${i}` });
    await eventually(() => s.frames.filter((f) => f.ref?.startsWith('b')).length === sent, 5000);
    const answers = s.frames.filter((f) => f.ref?.startsWith('b'));
    const times = answers.filter((f) => f.op === 'time');
    const refused = answers.filter((f) => f.op === 'error');
    expect(times.length).toBeGreaterThanOrEqual(FRAME_LIMITS.time.socketBurst);
    expect(times.length).toBeLessThanOrEqual(FRAME_LIMITS.time.socketBurst + 1); // a refill while they arrive
    expect(refused.length).toBe(sent - times.length);
    for (const r of refused) {
      expect(r.error).toMatchObject({ code: 'rate_limited' });
      expect((r.error as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(0);
    }
    s.send({ op: 'ping' });
    await s.next('pong');
    s.send({ op: 'action', ref: 'still', lid: 2, type: 'Slider', value: 0.5 });
    await eventually(() => s.frames.some((f) => f.ref === 'still' && f.op === 'ack'));
    expect(s.ws.readyState).toBe(WebSocket.OPEN);
    s.ws.close();
  });

  it('refuses a time frame without a ref, with a ref too long or with another field: error invalid_body, the socket stays open', async () => {
    const s = await connectLive(normal.url, await mintToken(normal, DEMO_LAYOUT.layoutId, apiKey));
    const bad = [{ op: 'time' }, { op: 'time', ref: '' }, { op: 'time', ref: 'x'.repeat(65) }, { op: 'time', ref: 7 }, { op: 'time', ref: 'a', t0: 1 }];
    for (const f of bad) s.send(f);
    await eventually(() => s.frames.filter((f) => f.op === 'error').length === bad.length, 5000);
    for (const e of s.frames.filter((f) => f.op === 'error')) expect(e.error).toMatchObject({ code: 'invalid_body' });
    expect(s.frames.some((f) => f.op === 'time')).toBe(false);
    expect(s.ws.readyState).toBe(WebSocket.OPEN);
    s.ws.close();
  });
});

describe("the client library's serverNow()", () => {
  let forwarder: Server;
  let target = 0;
  const links = new Set<Socket>();
  beforeAll(async () => {
    // a TCP forwarder whose target the test changes: the phone's address stays, the process behind it changes
    forwarder = createServer((c) => {
      const up = createConnection({ host: '127.0.0.1', port: target });
      links.add(c).add(up);
      c.pipe(up).pipe(c);
      const drop = () => (c.destroy(), up.destroy(), links.delete(c), links.delete(up));
      c.on('error', drop).on('close', drop);
      up.on('error', drop).on('close', drop);
    });
    await new Promise<void>((r) => forwarder.listen(0, '127.0.0.1', r));
  });
  afterAll(() => {
    for (const l of links) l.destroy();
    forwarder.close();
  });

  it("is Redis's time within the uncertainty it states, and stays so when the socket moves to a process whose clock is 5 s ahead", async () => {
    target = normal.port;
    const url = `ws://127.0.0.1:${(forwarder.address() as { port: number }).port}/live`;
    const live = new LiveClient({ url, token: await mintToken(normal, DEMO_LAYOUT.layoutId, apiKey), WebSocket: WebSocket, heartbeatDeadMs: 3000 });
    try {
      await eventually(() => live.clockUncertaintyMs() < 5, 5000);
      const check = async () => {
        const before = await redisNow();
        const estimate = live.serverNow();
        const after = await redisNow();
        const u = live.clockUncertaintyMs();
        expect(estimate, `uncertainty ${u} ms`).toBeGreaterThan(before - u - 2);
        expect(estimate, `uncertainty ${u} ms`).toBeLessThan(after + u + 2);
      };
      await check();
      const pages = () => live.page?.version;
      expect(pages()).toBeDefined();
      // the socket moves: the forwarder now leads to the other process, and the link is cut
      target = ahead.port;
      const opened: string[] = [];
      live.on('state', (st) => opened.push(st));
      for (const l of links) l.destroy();
      await eventually(() => opened.includes('connecting') && live.state === 'open', 10_000);
      // its first exchanges there
      await new Promise((r) => setTimeout(r, 1000));
      await check();
      expect(live.clockUncertaintyMs()).toBeLessThan(5);
    } finally {
      live.stop();
    }
  });
});
