// Crowd frames on the live channel, against a real gateway and Redis: the merged value of each
// aggregated control on the live page (equal to the offline figure, as the bridge's), at most 4
// frames a second per control, the current values right after the page for a socket that opens;
// and backpressure: a socket that does not read is skipped, gets the current state once it
// drains, and is closed with 4008 if it stays behind.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LayoutDefinition } from '../../schemas/types.js';
import { CROWD_LAYOUT, CROWD_MODES, CROWD_WINDOW_MS, crowdFrameMismatches, offlineCrowd, participantRounds, type CrowdAction, type CrowdFrame } from '../helpers/crowd.js';
import { eventually, mintToken, postAction, postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { connectLive } from '../helpers/live.js';
import { useRedis } from '../helpers/redis.js';
import { fuzzSeed, seededRandom } from '../helpers/seeded-random.js';

const redis = useRedis();
let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ redisUrl: redis.get().server.url, layout: CROWD_LAYOUT });
});
afterAll(() => t.close());

const seed = fuzzSeed();

describe(`crowd frames (seed ${seed})`, () => {
  it('carry each aggregated control merged, equal to the offline figure, to a socket that watches, and to one that opens later right after its page', async () => {
    const random = seededRandom(seed);
    const watcher = await connectLive(t.url, await mintToken(t, t.layoutId, t.apiKey));
    await watcher.next('page');
    const actions: CrowdAction[] = [];
    const participants = 30 + Math.floor(random() * 30);
    for (let p = 0; p < participants; p++) {
      const token = await mintToken(t, t.layoutId, t.apiKey);
      const rounds = participantRounds(random, p);
      // half act over their own socket, half over POST /action: one fold
      const socket = p % 2 === 0 ? await connectLive(t.url, token) : null;
      for (const round of rounds) {
        actions.push(...round);
        for (const [i, a] of round.entries()) {
          const body = { lid: a.lid, type: a.type, ...(a.value !== null && { value: a.value }) };
          if (socket) {
            const before = socket.frames.length;
            socket.send({ op: 'action', ref: `${p}-${i}`, ...body });
            expect(await socket.next('ack', before)).toEqual({ op: 'ack', ref: `${p}-${i}` });
          } else expect((await postAction(t, token, { layoutId: t.layoutId, ...body })).status).toBe(200);
        }
      }
      socket?.ws.close();
    }
    const expected = offlineCrowd(actions, CROWD_MODES, CROWD_WINDOW_MS, { 4: 3 });
    const crowd = () => watcher.frames.filter((f) => f.op === 'crowd') as unknown as CrowdFrame[];
    await eventually(() => crowdFrameMismatches(crowd(), expected).length === 0).catch(() => {});
    expect(crowdFrameMismatches(crowd(), expected)).toEqual([]);
    expect(crowd().every((f) => f.lid !== 12)).toBe(true); // a control without aggregate has no crowd
    const late = await connectLive(t.url, await mintToken(t, t.layoutId, t.apiKey));
    await eventually(() => late.frames.filter((f) => f.op === 'crowd').length >= Object.keys(expected).length);
    expect(late.frames[0]!.op).toBe('page');
    expect(crowdFrameMismatches(late.frames.filter((f) => f.op === 'crowd') as unknown as CrowdFrame[], expected)).toEqual([]);
    watcher.ws.close();
    late.ws.close();
  }, 60_000);

  it('carries numbers as the displays get them (float32: at most 7 significant digits), without float noise', async () => {
    const layoutId = 'precision-show';
    await t.admin.layouts.import(t.teamId, { ...CROWD_LAYOUT, layoutId });
    const token = async () => (await postJson(`${t.url}/token`, { layoutId }, { 'x-api-key': t.apiKey })).body.token as string;
    const watcher = await connectLive(t.url, await token());
    try {
      // three sliders at 0.1, 0.2 and 0.3: their mean is 0.2 in decimals, 0.20000000000000004 in
      // doubles; two at 1/3: a standard deviation that is 0, not a few e-17
      for (const value of [0.1, 0.2, 0.3]) expect((await postAction(t, await token(), { layoutId, lid: 13, type: 'Slider', value })).status).toBe(200);
      for (const value of [1 / 3, 1 / 3]) expect((await postAction(t, await token(), { layoutId, lid: 2, type: 'Slider', value })).status).toBe(200);
      await eventually(() => watcher.frames.some((f) => f.op === 'crowd' && f.lid === 13 && f.n === 3) && watcher.frames.some((f) => f.op === 'crowd' && f.lid === 2 && f.n === 2));
      const last = (lid: number) => watcher.frames.filter((f) => f.op === 'crowd' && f.lid === lid).at(-1)!;
      expect([last(13).value, last(13).sd]).toEqual([0.2, 0.0816497]);
      expect([last(2).value, last(2).sd]).toEqual([0.3333333, 0]);
      const numbers = (x: unknown): number[] => (typeof x === 'number' ? [x] : Array.isArray(x) ? x.flatMap(numbers) : typeof x === 'object' && x !== null ? Object.values(x).flatMap(numbers) : []);
      const digits = (n: number) => String(Math.abs(n)).replace(/e.*$/, '').replace('.', '').replace(/^0+/, '').replace(/0+$/, '').length;
      const crowd = watcher.frames.filter((f) => f.op === 'crowd');
      expect(crowd.flatMap((f) => numbers({ value: f.value, sd: f.sd, zones: f.zones })).filter((n) => digits(n) > 7)).toEqual([]);
    } finally {
      watcher.ws.close();
    }
  });

  it('keeps a vote of a control without windowMs for its mode\'s default (60 s), not a second', async () => {
    const layoutId = 'default-windows';
    const layout = structuredClone(CROWD_LAYOUT);
    layout.layoutId = layoutId;
    for (const c of layout.pages[0]!.controls) if (c.aggregate) c.aggregate = { mode: c.aggregate.mode };
    await t.admin.layouts.import(t.teamId, layout);
    const token = async () => (await postJson(`${t.url}/token`, { layoutId }, { 'x-api-key': t.apiKey })).body.token as string;
    const watcher = await connectLive(t.url, await token());
    try {
      expect((await postAction(t, await token(), { layoutId, lid: 4, type: 'Index', value: 1 })).status).toBe(200);
      await eventually(() => watcher.frames.some((f) => f.op === 'crowd' && f.lid === 4 && f.n === 1));
      await new Promise((r) => setTimeout(r, 2000));
      expect(watcher.frames.filter((f) => f.op === 'crowd' && f.lid === 4).at(-1)).toMatchObject({ n: 1, value: [0, 1, 0] });
    } finally {
      watcher.ws.close();
    }
  });

  it('sends at most 4 crowd frames a second per control, however fast the crowd moves', async () => {
    const watcher = await connectLive(t.url, await mintToken(t, t.layoutId, t.apiKey));
    await watcher.next('page');
    const tokens = await Promise.all(Array.from({ length: 4 }, () => mintToken(t, t.layoutId, t.apiKey)));
    const from = watcher.frames.length;
    const started = Date.now();
    const random = seededRandom(seed);
    let sent = 0;
    while (Date.now() - started < 3000) {
      await Promise.all(tokens.map((token) => postAction(t, token, { layoutId: t.layoutId, lid: 13, type: 'Slider', value: (sent++, Math.round(random() * 1000) / 1000) })));
    }
    await new Promise((r) => setTimeout(r, 300));
    const frames = watcher.frames.slice(from).filter((f) => f.op === 'crowd' && f.lid === 13);
    console.log(`figure: ${sent} slider moves in 3 s gave ${frames.length} crowd frames`);
    expect(sent).toBeGreaterThan(100);
    expect(frames.length).toBeGreaterThanOrEqual(6);
    expect(frames.length).toBeLessThanOrEqual(3.3 * 4 + 1);
    watcher.ws.close();
  }, 20_000);
});

/** A layout whose page frames are large (~200 KB), so a few fill what the kernel buffers for a socket that does not read. */
const BIG: LayoutDefinition = {
  layoutId: 'big-pages',
  name: 'Big pages',
  activePageId: 'a',
  pages: ['a', 'b'].map((pageId, p) => ({
    pageId,
    name: pageId.repeat(3),
    controls: Array.from({ length: 5 }, (_, i) => ({
      lid: p * 10 + i + 1,
      address: `/${p * 10 + i + 1}`,
      type: 'Index' as const,
      props: { label: `${pageId} choice ${i + 1}` },
      options: Array.from({ length: 200 }, (_, k) => ({ index: k, label: `option ${k} `.padEnd(190, '.') })),
    })),
  })),
};

describe('a socket that does not read (backpressure)', () => {
  it('is skipped past LIVE_BUFFER_BYTES, gets the current page once it drains, and is closed with 4008 when it stays behind', async () => {
    const g = await startTestGateway({ redisUrl: redis.get().server.url, layout: BIG, overrides: { liveBufferBytes: 16384, liveSlowCloseMs: 5000 } });
    try {
      const token = await mintToken(g, g.layoutId, g.apiKey);
      const slow = await connectLive(g.url, token);
      const stuck = await connectLive(g.url, token);
      const fast = await connectLive(g.url, token);
      await Promise.all([slow.next('page'), stuck.next('page'), fast.next('page')]);
      const tcp = (c: typeof slow) => (c.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
      tcp(slow).pause();
      tcp(stuck).pause();
      // page frames of ~200 KB: more than the kernel's buffers and the gateway's limit hold
      const switches = 41;
      const pausedAt = Date.now();
      for (let i = 0; i < switches; i++) await g.admin.layouts.activate(g.layoutId, i % 2 === 0 ? 'b' : 'a');
      const last = 'b'; // an odd number of switches from 'a'
      await eventually(() => fast.frames.filter((f) => f.op === 'page').length >= switches / 2, 20_000);
      tcp(slow).resume();
      await eventually(() => slow.frames.at(-1)?.op === 'page' && slow.frames.at(-1)?.activePageId === last);
      const got = slow.frames.filter((f) => f.op === 'page').length;
      console.log(`figure: a paused socket got ${got} of ${switches + 1} page frames, the last one the current page`);
      expect(got).toBeLessThan(switches);
      // the other stays paused while the pages keep changing: past LIVE_SLOW_CLOSE_MS over its buffer it is closed
      let page = 0;
      while (Date.now() - pausedAt < 7000) {
        await g.admin.layouts.activate(g.layoutId, page++ % 2 === 0 ? 'a' : 'b');
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(slow.ws.readyState).toBe(slow.ws.OPEN);
      tcp(stuck).resume(); // once it reads again it finds its close
      expect((await stuck.closed).code).toBe(4008);
      expect(fast.ws.readyState).toBe(fast.ws.OPEN);
      slow.ws.close();
      fast.ws.close();
    } finally {
      await g.close();
    }
  }, 60_000);
});

describe("the layout's crowd channel", () => {
  it('is subscribed (SSUBSCRIBE) only while this process holds sockets on the layout', async () => {
    const channel = t.gw.stores.keys.liveChannel(t.layoutId);
    const subscribers = async () => Number(((await redis.get().client.call('PUBSUB', 'SHARDNUMSUB', channel)) as [string, number])[1]);
    await eventually(async () => (await subscribers()) === 0); // the sockets of the tests above are gone
    const a = await connectLive(t.url, await mintToken(t, t.layoutId, t.apiKey));
    const b = await connectLive(t.url, await mintToken(t, t.layoutId, t.apiKey));
    await eventually(async () => (await subscribers()) === 1);
    a.ws.close();
    await a.closed;
    await new Promise((r) => setTimeout(r, 100));
    expect(await subscribers()).toBe(1); // one socket is still there
    b.ws.close();
    await eventually(async () => (await subscribers()) === 0);
  });
});

/** The gateway closed exactly one socket with `code`, by its metrics. */
async function closedOnce(g: TestGateway, code: number): Promise<boolean> {
  const r = await fetch(`http://127.0.0.1:${g.gw.opsPort}/metrics`);
  return new RegExp(`audience_gateway_live_closes_total\\{code="${code}"\\} 1\\n`).test(await r.text());
}

describe('answers to a client that does not read', () => {
  it('close the socket with 4008 once they would pass 64 times LIVE_BUFFER_BYTES, and only that socket', async () => {
    const g = await startTestGateway({ redisUrl: redis.get().server.url, overrides: { liveBufferBytes: 1024 } });
    try {
      const deaf = await connectLive(g.url, await mintToken(g, g.layoutId, g.apiKey));
      const other = await connectLive(g.url, await mintToken(g, g.layoutId, g.apiKey));
      (deaf.ws as unknown as { _socket: { pause(): void } })._socket.pause();
      // each bad frame is answered by an error frame of about 150 bytes that nobody reads
      const frame = JSON.stringify({ op: 'dance', ref: 'x' });
      for (let i = 0; i < 60_000 && deaf.ws.readyState === deaf.ws.OPEN; i++) deaf.ws.send(frame);
      await eventually(() => closedOnce(g, 4008), 10_000);
      const before = other.frames.length;
      other.send({ op: 'action', ref: 'fine', lid: 1, type: 'Button' });
      expect(await other.next('ack', before)).toEqual({ op: 'ack', ref: 'fine' });
      deaf.ws.terminate();
      other.ws.close();
    } finally {
      await g.close();
    }
  }, 30_000);
});

describe('acks to a client that does not read', () => {
  it('close the socket with 4008 once they would pass 64 times LIVE_BUFFER_BYTES, and only that socket; its stored actions stay stored', async () => {
    const g = await startTestGateway({ redisUrl: redis.get().server.url, overrides: { liveBufferBytes: 1024, actionRatePerSecond: 10_000, actionBurst: 100_000 } });
    try {
      const deaf = await connectLive(g.url, await mintToken(g, g.layoutId, g.apiKey));
      const other = await connectLive(g.url, await mintToken(g, g.layoutId, g.apiKey));
      await Promise.all([deaf.next('page'), other.next('page')]);
      (deaf.ws as unknown as { _socket: { pause(): void } })._socket.pause();
      // each action is stored, then acked (through the answers' queue) with a ref of 64 characters
      const ref = 'r'.repeat(64);
      const frame = JSON.stringify({ op: 'action', ref, lid: 1, type: 'Button' });
      // within the participant's budget (a refusal would be an error frame, sent without the queue)
      const start = Date.now();
      const budget = () => 100_000 + Math.floor(((Date.now() - start) / 1000) * 10_000 * 0.8);
      let sent = 0;
      while (sent < 400_000 && deaf.ws.readyState === deaf.ws.OPEN) {
        for (let i = 0; i < 2000 && sent < budget(); i++, sent++) deaf.ws.send(frame);
        await new Promise((r) => setTimeout(r, 20)); // let Redis store them
        if (await closedOnce(g, 4008)) break;
      }
      await eventually(() => closedOnce(g, 4008), 20_000);
      const before = other.frames.length;
      other.send({ op: 'action', ref: 'fine', lid: 1, type: 'Button' });
      expect(await other.next('ack', before)).toEqual({ op: 'ack', ref: 'fine' });
      const stored = await redis.get().client.xlen(g.gw.stores.keys.actions(g.layoutId));
      console.log(`figure: a deaf socket was closed after ${sent} actions sent, ${stored} stored`);
      const metrics = await (await fetch(`http://127.0.0.1:${g.gw.opsPort}/metrics`)).text();
      expect(metrics).not.toMatch(/audience_gateway_live_closes_total\{code="4029"\}/); // not closed as a flood
      expect(stored).toBeGreaterThan(1024 * 64 / 80); // more acks than its limit holds were queued for it
      deaf.ws.terminate();
      other.ws.close();
    } finally {
      await g.close();
    }
  }, 60_000);
});

describe('a crowd subscription that fails', () => {
  it('is tried again while sockets are there, so crowd frames come once Redis answers (CLIENT PAUSE makes the SSUBSCRIBE time out)', async () => {
    const g = await startTestGateway({ redisUrl: redis.get().server.url, layout: { ...CROWD_LAYOUT, layoutId: 'paused-show' }, overrides: { redisCommandTimeoutMs: 200 } });
    try {
      const channel = g.gw.stores.keys.liveChannel(g.layoutId);
      const subscribers = async () => Number(((await redis.get().client.call('PUBSUB', 'SHARDNUMSUB', channel)) as [string, number])[1]);
      const token = await mintToken(g, g.layoutId, g.apiKey);
      const first = await connectLive(g.url, token); // token and layout cached: the next upgrade needs no Redis
      first.ws.close();
      await eventually(async () => (await subscribers()) === 0);
      await redis.get().client.call('CLIENT', 'PAUSE', '800', 'ALL');
      const watcher = await connectLive(g.url, token); // its SSUBSCRIBE times out while Redis is paused
      await eventually(async () => (await subscribers()) === 1);
      await postAction(g, await mintToken(g, g.layoutId, g.apiKey), { layoutId: g.layoutId, lid: 2, type: 'Slider', value: 0.4 });
      await watcher.next('crowd');
      watcher.ws.close();
    } finally {
      await g.close();
    }
  }, 20_000);
});
