// Delivery guarantees of the bridge: completeness and order of discrete actions, coalescing of
// continuous ones, dead letters, stale drops, a display that comes back, and Redis outages.
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import type { Bridge } from '../../bridge/app.js';
import { ACTION_FIELD, encodeActionEntry } from '../../schemas/action-entry.js';
import { actionStreamKey, deadLetterKey } from '../../schemas/redis-keys.js';
import type { ActionEntry } from '../../schemas/types.js';
import { startTestBridge } from '../helpers/bridge.js';
import { DEMO_LAYOUT, eventually, postAction, useGatewayWithToken } from '../helpers/gateway.js';
import { LOADED_MACHINE_MS } from '../helpers/loaded-machine.js';
import { randomPrefix, stallRedis, useRedis } from '../helpers/redis.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { refusingPort, UdpSink } from '../helpers/udp-sink.js';

const redis = useRedis();

/** OSC messages in a bundle datagram (size-prefixed elements). */
function countMessages(d: Buffer): number {
  if (d.subarray(0, 8).toString('latin1') !== '#bundle\0') return 1;
  let n = 0;
  for (let at = 16; at < d.length; at += 4 + d.readInt32BE(at)) n += countMessages(d.subarray(at + 4, at + 4 + d.readInt32BE(at)));
  return n;
}
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function sink(): Promise<UdpSink> {
  const s = new UdpSink();
  await s.start();
  cleanups.push(() => s.stop());
  return s;
}
async function bridgeFor(prefix: string, layout: Record<string, unknown>, redisUrl = redis.get().server.url, reclaimIdleMs?: number): Promise<Bridge> {
  const { bridge } = await startTestBridge({ redisUrl, prefix, layouts: [{ layoutId: DEMO_LAYOUT.layoutId, ...layout }], ...(reclaimIdleMs && { reclaimIdleMs }) });
  cleanups.push(() => bridge.stop());
  return bridge;
}

describe('through the gateway', () => {
  // Delivery, not Redis's latency, is under test: a Redis call may take as long as a loaded machine
  // makes it (the 400 ms default answers 503 when Redis is kept off the CPU longer, as in CI once)
  const g = useGatewayWithToken(() => redis.get().server.url, { overrides: { redisCommandTimeoutMs: LOADED_MACHINE_MS } });

  it('delivers 1,000 discrete actions complete, once each and in order', async () => {
    const s = await sink();
    await bridgeFor(g.t.config.redisPrefix, { targets: [{ host: '127.0.0.1', port: s.port }] });
    let stall: Promise<void> | null = null;
    for (let i = 0; i < 1000; i++) {
      if (i === 500) stall = stallRedis(redis.get().server, 600); // kept off the CPU mid-run, as on a loaded machine
      const r = await postAction(g.t, g.token, { layoutId: g.t.layoutId, lid: 5, type: 'String', value: String(i) });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
    await stall;
    await eventually(() => s.messages.length >= 1000);
    await new Promise((r) => setTimeout(r, 100)); // nothing more may arrive
    expect(s.messages.map((m) => m.args[0]!.value)).toEqual(Array.from({ length: 1000 }, (_, i) => String(i)));
    for (const d of s.datagrams) expect(d.data.length).toBeLessThanOrEqual(1400);
  });

  it('ends a flood of Slider moves on the last value, coalescing the rest', async () => {
    const s = await sink();
    const bridge = await bridgeFor(g.t.config.redisPrefix, { tickHz: 20, targets: [{ host: '127.0.0.1', port: s.port }] });
    const values = Array.from({ length: 400 }, (_, i) => Math.round(((i * 37) % 100) + 1) / 100);
    values[values.length - 1] = 0.123;
    await Promise.all(
      Array.from({ length: 8 }, async (_, lane) => {
        for (let i = lane; i < values.length - 1; i += 8) await postAction(g.t, g.token, { layoutId: g.t.layoutId, lid: 2, type: 'Slider', value: values[i] });
      }),
    );
    await postAction(g.t, g.token, { layoutId: g.t.layoutId, lid: 2, type: 'Slider', value: 0.123 });
    await eventually(() => Math.abs((s.messages.at(-1)?.args[0]?.value as number) - 0.123) < 1e-6);
    expect(s.messages.length).toBeLessThan(values.length);
    expect(bridge.counters.total('coalesced')).toBeGreaterThan(0);
    expect(bridge.counters.total('coalesced') + s.messages.length).toBe(values.length);
  });
});

describe('straight from the stream', () => {
  const entry = (i: number, extra: Partial<ActionEntry> = {}): ActionEntry => ({ v: 1, id: `a-${i}-${Math.random()}`, layoutId: 'demo-show', lid: 4, address: '/004', type: 'Index', value: i % 3, ts: Date.now(), ...extra });

  it('dead-letters malformed entries, acks them, and keeps going', async () => {
    const prefix = randomPrefix();
    const s = await sink();
    const bridge = await bridgeFor(prefix, { targets: [{ host: '127.0.0.1', port: s.port }] });
    const c = redis.get().client;
    const key = actionStreamKey(prefix, 'demo-show');
    await c.xadd(key, '*', 'other', 'x');
    await c.xadd(key, '*', ACTION_FIELD, '{not json');
    await c.xadd(key, '*', ACTION_FIELD, JSON.stringify({ ...entry(1), value: 'seven' }));
    await c.xadd(key, '*', ACTION_FIELD, JSON.stringify({ ...entry(1), layoutId: 'elsewhere' }));
    await c.xadd(key, '*', ACTION_FIELD, encodeActionEntry(entry(2)));
    await eventually(() => s.messages.length === 1);
    expect(s.messages[0]!.args[0]!.value).toBe(2);
    expect(bridge.counters.total('deadLettered')).toBe(4);
    const dead = await c.xrange(deadLetterKey(prefix, 'demo-show'), '-', '+');
    expect(dead).toHaveLength(4);
    expect(dead.map((d) => d[1][d[1].indexOf('reason') + 1])).toEqual([expect.stringContaining('no "action" field'), 'not JSON', expect.stringContaining('value'), expect.stringContaining('elsewhere')]);
    await eventually(async () => ((await c.xpending(key, 'bridge:test-bridge')) as [number])[0] === 0);
  });

  it('drops actions older than maxAgeMs when read, and counts them', async () => {
    const prefix = randomPrefix();
    const s = await sink();
    const key = actionStreamKey(prefix, 'demo-show');
    const bridge = await bridgeFor(prefix, { maxAgeMs: 500, targets: [{ host: '127.0.0.1', port: s.port }] });
    const c = redis.get().client;
    await c.xadd(key, '*', ACTION_FIELD, encodeActionEntry(entry(1, { ts: Date.now() - 5000 })));
    await c.xadd(key, '*', ACTION_FIELD, encodeActionEntry(entry(2)));
    await eventually(() => s.messages.length === 1);
    expect(s.messages[0]!.args[0]!.value).toBe(2);
    expect(bridge.counters.total('droppedStale')).toBe(1);
  });

  it('counts an action dropped as stale once: delivered again (its XACK lost, say), it is a duplicate', async () => {
    const prefix = randomPrefix();
    const s = await sink();
    const key = actionStreamKey(prefix, 'demo-show');
    const bridge = await bridgeFor(prefix, { maxAgeMs: 500, targets: [{ host: '127.0.0.1', port: s.port }] });
    const old = entry(1, { ts: Date.now() - 5000 });
    await redis.get().client.xadd(key, '*', ACTION_FIELD, encodeActionEntry(old));
    await eventually(() => bridge.counters.total('droppedStale') === 1);
    await redis.get().client.xadd(key, '*', ACTION_FIELD, encodeActionEntry(old));
    await eventually(() => bridge.counters.total('read') === 2);
    expect(bridge.counters.total('duplicates')).toBe(1);
    expect(bridge.counters.total('droppedStale')).toBe(1);
    expect(s.messages).toHaveLength(0);
  });

  it('drops an action id it has already sent (a redelivered entry)', async () => {
    const prefix = randomPrefix();
    const s = await sink();
    const key = actionStreamKey(prefix, 'demo-show');
    const bridge = await bridgeFor(prefix, { targets: [{ host: '127.0.0.1', port: s.port }] });
    const e = entry(1);
    await redis.get().client.xadd(key, '*', ACTION_FIELD, encodeActionEntry(e));
    await eventually(() => s.messages.length === 1);
    await redis.get().client.xadd(key, '*', ACTION_FIELD, encodeActionEntry(e));
    await eventually(() => bridge.counters.total('duplicates') === 1);
    await new Promise((r) => setTimeout(r, 100));
    expect(s.messages).toHaveLength(1);
  });

  it('retries a display that refuses, with backoff, and catches up when it returns', async () => {
    const prefix = randomPrefix();
    const s = new UdpSink();
    const off = await refusingPort(); // the display is off: its port refuses
    const port = off.port;
    const bridge = await bridgeFor(prefix, { maxAgeMs: 10_000, targets: [{ host: '127.0.0.1', port }] });
    const key = actionStreamKey(prefix, 'demo-show');
    const c = redis.get().client;
    for (let i = 0; i < 5; i++) await c.xadd(key, '*', ACTION_FIELD, encodeActionEntry(entry(i, { type: 'String', lid: 5, address: '/005', value: `m${i}` })));
    await eventually(() => (bridge.counters.target(`127.0.0.1:${port}`).sendErrors ?? 0) > 0, 10_000);
    await off.release();
    await s.start(port); // the display is back
    cleanups.push(() => s.stop());
    await eventually(() => s.messages.some((m) => m.args[0]!.value === 'm4'));
    const got = s.messages.map((m) => m.args[0]!.value);
    expect(got).toEqual([...got].sort()); // in order
    expect(new Set(got).size).toBe(got.length); // once
  });

  /** One action entry (Index 1) in a fresh stream, read by `consumer` of this bridge's group and not acked. */
  async function leavePending(consumer: string) {
    const prefix = randomPrefix();
    const key = actionStreamKey(prefix, 'demo-show');
    const c = redis.get().client;
    await c.xgroup('CREATE', key, 'bridge:test-bridge', '$', 'MKSTREAM');
    await c.xadd(key, '*', ACTION_FIELD, encodeActionEntry(entry(1)));
    await c.call('XREADGROUP', 'GROUP', 'bridge:test-bridge', consumer, 'COUNT', 10, 'STREAMS', key, '>');
    return { prefix, key, c };
  }

  it('after a restart, first sends what it had read but not acked (its own pending entries)', async () => {
    // what a crash between reading and sending leaves: read by this bridge's consumer, never acked
    const { prefix, key, c } = await leavePending('test-bridge');
    const s = await sink();
    await bridgeFor(prefix, { targets: [{ host: '127.0.0.1', port: s.port }] }); // reclaim only after 30 s idle: not what delivers it
    await eventually(() => s.messages.length === 1);
    expect(s.messages[0]!.args[0]!.value).toBe(1);
    await eventually(async () => ((await c.xpending(key, 'bridge:test-bridge')) as [number])[0] === 0);
  });

  it('reclaims entries stuck with another consumer of its group (XAUTOCLAIM)', async () => {
    // a consumer that read it and vanished without acking
    const { prefix, key, c } = await leavePending('vanished');
    const s = await sink();
    await bridgeFor(prefix, { targets: [{ host: '127.0.0.1', port: s.port }] }, undefined, 300);
    await eventually(() => s.messages.length === 1);
    await eventually(async () => ((await c.xpending(key, 'bridge:test-bridge')) as [number])[0] === 0);
  });

  it('paces a backlog: never more than maxMessagesPerTick to a target in one tick', async () => {
    const prefix = randomPrefix();
    const key = actionStreamKey(prefix, 'demo-show');
    const s = await sink();
    const c = redis.get().client;
    await c.xgroup('CREATE', key, 'bridge:test-bridge', '$', 'MKSTREAM');
    const p = c.pipeline();
    for (let i = 0; i < 200; i++) p.xadd(key, '*', ACTION_FIELD, encodeActionEntry(entry(i, { type: 'String', lid: 5, address: '/005', value: String(i) })));
    await p.exec();
    // The sink reads datagrams when this test's event loop gets to them: on a loaded machine it can
    // stall past a tick's gap, and two ticks' datagrams then arrive as one group. The stalls are
    // timed here, and only a group that no stall can explain is counted against the bridge.
    const stallEnds: number[] = [];
    let beat = Date.now();
    const probe = setInterval(() => {
      const now = Date.now();
      if (now - beat > 40) stallEnds.push(now);
      beat = now;
    }, 5);
    const started = Date.now();
    try {
      await bridgeFor(prefix, { tickHz: 10, maxMessagesPerTick: 25, targets: [{ host: '127.0.0.1', port: s.port }] });
      await eventually(() => s.messages.length === 200);
    } finally {
      clearInterval(probe);
    }
    expect(Date.now() - started).toBeGreaterThanOrEqual(700); // 200 / 25 = 8 ticks of 100 ms
    // the datagrams of one tick arrive together; ticks are 100 ms apart
    const groups: { first: number; last: number; messages: number }[] = [];
    for (const d of s.datagrams) {
      const g = groups.at(-1);
      if (g && d.at - g.last <= 50) [g.last, g.messages] = [d.at, g.messages + countMessages(d.data)];
      else groups.push({ first: d.at, last: d.at, messages: countMessages(d.data) });
    }
    const stalledInto = (g: { first: number; last: number }) => stallEnds.some((end) => end >= g.first - 10 && end <= g.last + 10);
    expect(groups.filter((g) => g.messages > 25 && !stalledInto(g))).toEqual([]);
    expect(groups.filter((g) => !stalledInto(g)).length).toBeGreaterThan(0); // something was measured
    expect(groups.reduce((a, g) => a + g.messages, 0)).toBe(200);
  });

  it('rides out Redis being away and catches up on what was added meanwhile', async () => {
    const prefix = randomPrefix();
    const proxy = new TcpProxy(redis.get().server.port);
    await proxy.start();
    cleanups.push(() => proxy.stop());
    const s = await sink();
    const bridge = await bridgeFor(prefix, { targets: [{ host: '127.0.0.1', port: s.port }] }, `redis://127.0.0.1:${proxy.port}`);
    const key = actionStreamKey(prefix, 'demo-show');
    const c = new Redis(redis.get().server.url);
    cleanups.push(() => Promise.resolve(c.disconnect()));
    await c.xadd(key, '*', ACTION_FIELD, encodeActionEntry(entry(0)));
    await eventually(() => s.messages.length === 1);
    proxy.cut();
    proxy.hold(); // the bridge cannot reach Redis
    for (let i = 1; i <= 20; i++) await c.xadd(key, '*', ACTION_FIELD, encodeActionEntry(entry(i)));
    await eventually(() => bridge.counters.total('readErrors') > 0);
    proxy.release();
    await eventually(() => s.messages.length === 21);
  });
});

describe('a bridge’s first start on a layout', () => {
  it('delivers the entries newer than maxAgeMs that arrived before its group existed, and nothing older', async () => {
    const s = await sink();
    const prefix = randomPrefix();
    const key = actionStreamKey(prefix, DEMO_LAYOUT.layoutId);
    const c = redis.get().client;
    const at = (ms: number, value: string) => c.xadd(key, `${ms}-0`, ACTION_FIELD, encodeActionEntry({ v: 1, id: `first-${value}`, layoutId: DEMO_LAYOUT.layoutId, lid: 5, address: '/005', type: 'String', value, ts: ms }));
    const now = Date.now();
    await at(now - 5000, 'too old'); // past maxAgeMs (2 s): stale whatever the group
    await at(now - 400, 'sent while the bridge was starting');
    await bridgeFor(prefix, { targets: [{ host: '127.0.0.1', port: s.port }] });
    await eventually(() => s.messages.length >= 1);
    await new Promise((r) => setTimeout(r, 200));
    expect(s.messages.map((m) => m.args[0]!.value)).toEqual(['sent while the bridge was starting']);
  });
});
