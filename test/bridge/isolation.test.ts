// The live output survives what reaches it from the stream: an entry the OSC encoding refuses, a
// value out of OSC's range, a pending entry whose data was trimmed, a consumer group or stream that
// vanished, and acks that keep failing. Every entry read ends in exactly one counted outcome.
import { afterEach, describe, expect, it } from 'vitest';
import type { Bridge } from '../../bridge/app.js';
import { ACTION_FIELD, encodeActionEntry } from '../../schemas/action-entry.js';
import { actionStreamKey, deadLetterKey } from '../../schemas/redis-keys.js';
import type { ActionEntry } from '../../schemas/types.js';
import { startTestBridge } from '../helpers/bridge.js';
import { eventually } from '../helpers/gateway.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';
import { UdpSink } from '../helpers/udp-sink.js';

const redis = useRedis();
const LAYOUT = 'show';
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

let n = 0;
const entry = (extra: Partial<ActionEntry> = {}): ActionEntry => ({ v: 1, id: `e-${++n}-${Math.random()}`, layoutId: LAYOUT, lid: 5, address: '/005', type: 'String', value: `m${n}`, ts: Date.now(), ...extra });
/** An entry as JSON with fields the schema would refuse (the types do not allow them). */
const rawEntry = (patch: Record<string, unknown>) => JSON.stringify({ ...entry(), ...patch });

async function setup(layout: Record<string, unknown> = {}, opts: { reclaimIdleMs?: number } = {}) {
  const prefix = randomPrefix();
  const key = actionStreamKey(prefix, LAYOUT);
  const sink = new UdpSink();
  await sink.start();
  cleanups.push(() => sink.stop());
  const c = redis.get().client;
  const start = async (): Promise<Bridge> => {
    const { bridge } = await startTestBridge({ redisUrl: redis.get().server.url, prefix, layouts: [{ layoutId: LAYOUT, targets: [{ host: '127.0.0.1', port: sink.port }], ...layout }], ...opts });
    cleanups.push(() => bridge.stop());
    return bridge;
  };
  const add = (json: string) => c.xadd(key, '*', ACTION_FIELD, json) as Promise<string>;
  return { prefix, key, sink, c, start, add, values: () => sink.messages.map((m) => m.args[0]?.value) };
}

/** read = sent + coalesced + duplicates + dead-lettered + stale + lost + pending, for the layout. */
function expectCountersAddUp(bridge: Bridge): void {
  const c = bridge.counters.layout(LAYOUT);
  const outcomes = c.sent + c.coalesced + c.duplicates + c.deadLettered + c.droppedStale + c.lostTrimmed + bridge.pending(LAYOUT);
  expect({ read: c.read, outcomes }).toEqual({ read: c.read, outcomes: c.read });
}

describe('an entry the output cannot carry', () => {
  it('dead-letters a String with U+0000 (osc-min refuses it) and keeps sending the entries around it', async () => {
    const t = await setup();
    const bridge = await t.start();
    await t.add(encodeActionEntry(entry({ value: 'before' })));
    await t.add(encodeActionEntry(entry({ value: 'hi\u0000there' })));
    await t.add(encodeActionEntry(entry({ value: 'after' })));
    await eventually(() => t.values().includes('after'));
    expect(t.values()).toEqual(['before', 'after']);
    const dead = await t.c.xrange(deadLetterKey(t.prefix, LAYOUT), '-', '+');
    expect(dead).toHaveLength(1);
    expect(dead[0]![1][dead[0]![1].indexOf('reason') + 1]).toMatch(/value/);
    expect(bridge.counters.layout(LAYOUT).deadLettered).toBe(1);
    await eventually(async () => ((await t.c.xpending(t.key, 'bridge:test-bridge')) as [number])[0] === 0);
    expectCountersAddUp(bridge);
  });

  it.each([
    ['an Index of 2^53', { type: 'Index', lid: 4, address: '/004', value: 2 ** 53 }, /value/],
    ['an Index of 2^31 (OSC ints are 32-bit)', { type: 'Index', lid: 4, address: '/004', value: 2 ** 31 }, /value/],
    ['a lone surrogate in a String', { value: 'a\ud800b' }, /value/],
    ['a ts in the year 2286', { ts: 9_999_999_999_999 }, /future/],
  ])('dead-letters %s with its reason', async (_what, patch, reason) => {
    const t = await setup();
    const bridge = await t.start();
    await t.add(rawEntry(patch));
    await t.add(encodeActionEntry(entry({ value: 'next' })));
    await eventually(() => t.values().includes('next'));
    expect(t.values()).toEqual(['next']);
    const dead = await t.c.xrange(deadLetterKey(t.prefix, LAYOUT), '-', '+');
    expect(dead.map((d) => d[1][d[1].indexOf('reason') + 1])).toEqual([expect.stringMatching(reason)]);
    expectCountersAddUp(bridge);
  });

  it('keeps going when the dead-letter stream itself refuses the copy (its key holds another type)', async () => {
    const t = await setup();
    const bridge = await t.start();
    await t.c.set(deadLetterKey(t.prefix, LAYOUT), 'not a stream');
    await t.add(rawEntry({ value: 'bad\u0000' }));
    await t.add(encodeActionEntry(entry({ value: 'after the bad one' })));
    await eventually(() => t.values().includes('after the bad one'));
    await t.add(encodeActionEntry(entry({ value: 'and the next' })));
    await eventually(() => t.values().includes('and the next'));
    const c = bridge.counters.layout(LAYOUT);
    expect(c.deadLettered).toBe(1);
    expect(c.deadLetterFailures).toBe(1);
    await eventually(async () => ((await t.c.xpending(t.key, 'bridge:test-bridge')) as [number])[0] === 0);
    expectCountersAddUp(bridge);
  });

  it('sends an entry from slightly in the future (clock skew within maxAgeMs)', async () => {
    const t = await setup({ maxAgeMs: 2000 });
    await t.start();
    await t.add(encodeActionEntry(entry({ value: 'skewed', ts: Date.now() + 1000 })));
    await eventually(() => t.values().includes('skewed'));
  });
});

describe('a pending entry whose data is gone', () => {
  /** Entries read by this bridge's consumer before a "crash", never acked. */
  async function leavePending(t: Awaited<ReturnType<typeof setup>>, consumer: string, count: number): Promise<string[]> {
    await t.c.xgroup('CREATE', t.key, 'bridge:test-bridge', '$', 'MKSTREAM');
    const ids: string[] = [];
    for (let i = 0; i < count; i++) ids.push(await t.add(encodeActionEntry(entry({ value: `old-${i}` }))));
    await t.c.call('XREADGROUP', 'GROUP', 'bridge:test-bridge', consumer, 'COUNT', 100, 'STREAMS', t.key, '>');
    return ids;
  }

  it('acks and counts its own trimmed pending entries, then delivers new ones within 1 s', async () => {
    const t = await setup();
    const ids = await leavePending(t, 'test-bridge', 3);
    await t.c.xdel(t.key, ...ids); // trimmed (MAXLEN) or deleted while the bridge was down
    const bridge = await t.start();
    const sent = Date.now();
    await t.add(encodeActionEntry(entry({ value: 'new' })));
    await eventually(() => t.values().includes('new'), 1000);
    expect(Date.now() - sent).toBeLessThan(1000);
    expect(bridge.counters.layout(LAYOUT).lostTrimmed).toBe(3);
    await eventually(async () => ((await t.c.xpending(t.key, 'bridge:test-bridge')) as [number])[0] === 0);
    expectCountersAddUp(bridge);
  });

  it('counts trimmed entries that XAUTOCLAIM finds with another consumer, and reclaims the rest', async () => {
    const t = await setup({}, { reclaimIdleMs: 200 });
    const ids = await leavePending(t, 'vanished', 4);
    await t.c.xdel(t.key, ids[0]!, ids[2]!);
    const bridge = await t.start();
    await eventually(() => t.values().length === 2);
    expect(t.values()).toEqual(['old-1', 'old-3']);
    await eventually(() => bridge.counters.layout(LAYOUT).lostTrimmed === 2);
    await eventually(async () => ((await t.c.xpending(t.key, 'bridge:test-bridge')) as [number])[0] === 0);
    expectCountersAddUp(bridge);
  });

  it('takes one it sent, whose XACK was lost before the data was trimmed, as a duplicate: nothing lost', async () => {
    const t = await setup({}, { reclaimIdleMs: 200 });
    const bridge = await t.start();
    const id = await t.add(encodeActionEntry(entry({ value: 'sent' })));
    await eventually(() => t.values().includes('sent') && bridge.counters.layout(LAYOUT).acked === 1);
    // what a link that drops the XACK leaves: the entry pending for this bridge after it was sent...
    await t.c.call('XCLAIM', t.key, 'bridge:test-bridge', 'test-bridge', 0, id, 'FORCE');
    expect(((await t.c.xpending(t.key, 'bridge:test-bridge')) as [number])[0]).toBe(1);
    // ...and then trimmed away: XAUTOCLAIM names it without its data
    await t.c.xtrim(t.key, 'MAXLEN', 0);
    await eventually(async () => ((await t.c.xpending(t.key, 'bridge:test-bridge')) as [number])[0] === 0);
    // Redis drops it from the pending list when it names it; the bridge counts it once the reply is read
    const c = bridge.counters.layout(LAYOUT);
    await eventually(() => c.duplicates + c.lostUnread + c.lostTrimmed > 0);
    expect({ lostUnread: c.lostUnread, lostTrimmed: c.lostTrimmed, duplicates: c.duplicates, sent: c.sent, read: c.read }).toEqual({ lostUnread: 0, lostTrimmed: 0, duplicates: 1, sent: 1, read: 2 });
    expect(t.values()).toEqual(['sent']);
    expectCountersAddUp(bridge);
  });
});

describe('a consumer group or stream that vanished', () => {
  it.each([
    ['the group was destroyed', (t: Awaited<ReturnType<typeof setup>>) => t.c.xgroup('DESTROY', t.key, 'bridge:test-bridge')],
    ['the stream was deleted (Redis lost its data)', (t: Awaited<ReturnType<typeof setup>>) => t.c.del(t.key)],
  ])('recreates it when %s and delivers what comes after, without a restart', async (_what, lose) => {
    const t = await setup();
    const bridge = await t.start();
    await t.add(encodeActionEntry(entry({ value: 'first' })));
    await eventually(() => t.values().includes('first'));
    await lose(t);
    await t.add(encodeActionEntry(entry({ value: 'second' })));
    await eventually(() => t.values().includes('second'));
    expect(t.values()).toEqual(['first', 'second']);
    expect(bridge.counters.layout(LAYOUT).groupsRecreated).toBeGreaterThanOrEqual(1);
    const health = await fetch(`http://127.0.0.1:${bridge.opsPort}/readyz`);
    expect(health.status).toBe(200);
  });
});

describe('counters', () => {
  it('add up for a flood of coalesced Slider moves, and every entry read is acked once', async () => {
    const t = await setup({ tickHz: 10 });
    const bridge = await t.start();
    const p = t.c.pipeline();
    for (let i = 0; i < 300; i++) p.xadd(t.key, '*', ACTION_FIELD, encodeActionEntry(entry({ type: 'Slider', lid: 2, address: '/002', value: (i % 100) / 100 })));
    await p.exec();
    await eventually(() => bridge.counters.layout(LAYOUT).read === 300 && bridge.pending(LAYOUT) === 0);
    const c = bridge.counters.layout(LAYOUT);
    expect(c.coalesced).toBeGreaterThan(0);
    expect(c.sent + c.coalesced).toBe(300);
    await eventually(() => bridge.counters.layout(LAYOUT).acked === 300);
    await new Promise((r) => setTimeout(r, 300));
    expect(bridge.counters.layout(LAYOUT).acked).toBe(300); // not once more per coalesced entry
    expectCountersAddUp(bridge);
  });

  it('bounds and counts ack retries while XACK keeps failing; delivery goes on', async () => {
    const t = await setup({ tickHz: 100 });
    const bridge = await t.start();
    await t.c.call('ACL', 'SETUSER', 'default', '-xack');
    cleanups.push(() => t.c.call('ACL', 'SETUSER', 'default', '+xack'));
    for (let i = 0; i < 5; i++) await t.add(encodeActionEntry(entry({ value: `unackable-${i}` })));
    await eventually(() => t.values().length === 5);
    await eventually(() => bridge.counters.layout(LAYOUT).acksAbandoned === 5);
    const c = bridge.counters.layout(LAYOUT);
    expect(c.ackFailures).toBeGreaterThan(0);
    expect(c.ackFailures).toBeLessThanOrEqual(20);
    await t.c.call('ACL', 'SETUSER', 'default', '+xack');
    await t.add(encodeActionEntry(entry({ value: 'later' })));
    await eventually(() => t.values().includes('later'));
  });
});
