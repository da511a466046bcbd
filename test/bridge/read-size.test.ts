// The reader asks Redis for no more entries than fit in its backlog (two ticks of messages), and
// never more than 64: a reply is parsed in one go, so a read of 1,000 entries when 200 fit held
// the event loop for milliseconds that the next tick then waited out. Watched with MONITOR on a
// real Redis.
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { ACTION_FIELD, encodeActionEntry } from '../../schemas/action-entry.js';
import { actionStreamKey } from '../../schemas/redis-keys.js';
import type { ActionEntry } from '../../schemas/types.js';
import { startTestBridge } from '../helpers/bridge.js';
import { eventually } from '../helpers/gateway.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';
import { UdpSink } from '../helpers/udp-sink.js';

const redis = useRedis();

/**
 * Writes `total` Index actions at once (a backlog far larger than the bridge keeps), lets a real
 * bridge with `maxMessagesPerTick` send them all to a sink, and returns the COUNT of every
 * XREADGROUP it made (watched with MONITOR) and the values the sink received, in order.
 */
async function drainBurst(layoutId: string, total: number, maxMessagesPerTick: number): Promise<{ counts: number[]; values: unknown[] }> {
  const prefix = randomPrefix();
  const key = actionStreamKey(prefix, layoutId);
  const sink = new UdpSink();
  await sink.start();
  const c = new Redis(redis.get().server.url);
  // ioredis switches a connection to monitor mode a microtask after MONITOR's OK: a command of
  // another client arriving in the same chunk as that OK (a new client's INFO ready check) was
  // taken for a reply, and ioredis threw "Command queue state error" (seen once on Node 22).
  // So every client of this Redis is ready, and quiet, before the monitor starts.
  await Promise.all([c.ping(), redis.get().client.ping()]);
  const monitor = await c.monitor(); // a connection of its own
  const counts: number[] = [];
  monitor.on('monitor', (_time: string, args: string[]) => {
    if (args[0]?.toLowerCase() === 'xreadgroup' && args.includes(key)) counts.push(Number(args[args.findIndex((a) => a.toUpperCase() === 'COUNT') + 1]));
  });
  const { bridge } = await startTestBridge({ redisUrl: redis.get().server.url, prefix, layouts: [{ layoutId, tickHz: 100, maxMessagesPerTick, targets: [{ host: '127.0.0.1', port: sink.port }] }] });
  try {
    const burst = c.pipeline();
    for (let i = 0; i < total; i++) {
      const entry: ActionEntry = { v: 1, id: `${layoutId}-${i}`, layoutId, lid: 4, address: '/004', type: 'Index', value: i % 3, ts: Date.now() };
      burst.xadd(key, '*', ACTION_FIELD, encodeActionEntry(entry));
    }
    await burst.exec();
    await eventually(() => sink.messages.length >= total, 10_000);
    return { counts, values: sink.messages.map((m) => m.args[0]?.value) };
  } finally {
    await bridge.stop();
    monitor.disconnect();
    c.disconnect();
    await sink.stop();
  }
}

describe('the size of a read', () => {
  it('asks for at most 64 entries however large the backlog may grow (a reply is parsed in one go)', async () => {
    const total = 1000;
    const { counts } = await drainBurst('read-cap', total, 1000); // the backlog could hold 2,000
    expect(counts.length).toBeGreaterThan(total / 64 - 1);
    expect(Math.max(...counts)).toBe(64);
  });

  it('never asks for more entries than fit in the backlog, and still delivers a backlog of 600', async () => {
    const total = 600;
    const { counts, values } = await drainBurst('read-size', total, 10); // the backlog holds 20
    expect(values).toEqual(Array.from({ length: total }, (_, i) => i % 3));
    expect(counts.length).toBeGreaterThan(0);
    expect(Math.max(...counts)).toBeLessThanOrEqual(20);
  });
});
