// The bridge's XACK queue against a real Redis behind a TCP proxy that cuts the link: a client
// made as the bridge makes its own (offline queue off) fails every XACK at once while the link is
// down, once a tick. The acks wait out a short cut; XACK refused for good is still given up.
import { afterEach, describe, expect, it } from 'vitest';
import { AckQueue, MAX_ACK_ATTEMPTS } from '../../bridge/ack-queue.js';
import { BridgeCounters } from '../../bridge/counters.js';
import { createLogger } from '../../runtime/log.js';
import { createRedisClient, type RedisClient } from '../../runtime/redis.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { eventually } from '../helpers/gateway.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';

const redis = useRedis();
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A stream with `n` entries read (pending) by one consumer of its group: their ids. */
async function pendingEntries(stream: string, n: number): Promise<string[]> {
  const c = redis.get().client;
  await c.xgroup('CREATE', stream, 'g', '$', 'MKSTREAM');
  for (let i = 0; i < n; i++) await c.xadd(stream, '*', 'f', String(i));
  const read = (await c.xreadgroup('GROUP', 'g', 'me', 'COUNT', n, 'STREAMS', stream, '>')) as [string, [string, string[]][]][];
  return read[0]![1].map(([id]) => id);
}

/** The queue as the scheduler drives it: a flush every millisecond (its tick), acking through `client`. */
function tickingQueue(client: RedisClient, stream: string) {
  const counters = new BridgeCounters().layout('show');
  const q = new AckQueue(async (ids) => void (await client.xack(stream, 'g', ...ids)), counters, createLogger('test', 'silent'), 'show');
  const tick = setInterval(() => q.flush(), 1);
  cleanups.push(() => clearInterval(tick));
  return { q, counters };
}

function bridgeLikeClient(url: string): RedisClient {
  const client = createRedisClient({ url }, { name: 'ack-test', commandTimeoutMs: 1000, reconnectStepMs: 100, maxReconnectDelayMs: 500 });
  client.on('error', () => {});
  cleanups.push(() => client.disconnect());
  return client;
}

const pending = async (stream: string) => ((await redis.get().client.xpending(stream, 'g')) as [number])[0];

describe('the XACK queue', () => {
  it('keeps its acks through a cut of one second and sends them once the link is back', async () => {
    // replies come 30 ms late, as over a venue's link
    const proxy = new FaultProxy({ targets: () => [redis.get().server.port], down: { latencyMs: 30 } });
    await proxy.start();
    cleanups.push(() => proxy.stop());
    const stream = `${randomPrefix()}acks`;
    const ids = await pendingEntries(stream, 5);
    const client = bridgeLikeClient(`redis://127.0.0.1:${proxy.port}`);
    await eventually(async () => (await client.ping().catch(() => null)) === 'PONG');
    const { q, counters } = tickingQueue(client, stream);
    proxy.cut();
    for (const id of ids) q.add(id);
    await new Promise((r) => setTimeout(r, 1000));
    expect(counters.ackFailures).toBeGreaterThan(0); // they were tried, and failed, while the link was down
    proxy.restore();
    // Redis empties the pending list a reply's latency before the queue counts the acks
    await eventually(async () => (await pending(stream)) === 0 && counters.acked === 5);
    expect(counters.acksAbandoned).toBe(0);
  });

  it('gives XACK refused for good up after MAX_ACK_ATTEMPTS calls, counted', async () => {
    const stream = `${randomPrefix()}acks`;
    const ids = await pendingEntries(stream, 3);
    const client = bridgeLikeClient(redis.get().server.url);
    await eventually(async () => (await client.ping().catch(() => null)) === 'PONG');
    // a key of another type: every XACK on it is refused (WRONGTYPE), as an ACL without +xack would
    const wrong = `${stream}:not-a-stream`;
    await redis.get().client.set(wrong, 'x');
    const { q, counters } = tickingQueue(client, wrong);
    for (const id of ids) q.add(id);
    await eventually(() => counters.acksAbandoned === 3);
    expect(counters.ackFailures).toBe(MAX_ACK_ATTEMPTS);
    expect(q.waiting).toBe(false);
  });
});
