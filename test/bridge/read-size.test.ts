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

/** The COUNT of every XREADGROUP on `key` while `run` goes on, watched with MONITOR. */
async function readCounts(key: string, run: (c: Redis) => Promise<void>): Promise<number[]> {
  const c = new Redis(redis.get().server.url);
  const monitor = await c.duplicate().monitor();
  const counts: number[] = [];
  monitor.on('monitor', (_time: string, args: string[]) => {
    if (args[0]?.toLowerCase() === 'xreadgroup' && args.includes(key)) counts.push(Number(args[args.findIndex((a) => a.toUpperCase() === 'COUNT') + 1]));
  });
  try {
    await run(c);
  } finally {
    monitor.disconnect();
    c.disconnect();
  }
  return counts;
}

describe('the size of a read', () => {
  it('asks for at most 64 entries however large the backlog may grow (a reply is parsed in one go)', async () => {
    const prefix = randomPrefix();
    const layoutId = 'read-cap';
    const key = actionStreamKey(prefix, layoutId);
    const sink = new UdpSink();
    await sink.start();
    const total = 1000;
    const counts = await readCounts(key, async (c) => {
      // 1,000 messages a tick: the backlog could hold 2,000
      const { bridge } = await startTestBridge({ redisUrl: redis.get().server.url, prefix, layouts: [{ layoutId, tickHz: 100, maxMessagesPerTick: 1000, targets: [{ host: '127.0.0.1', port: sink.port }] }] });
      try {
        const burst = c.pipeline();
        for (let i = 0; i < total; i++) {
          const entry: ActionEntry = { v: 1, id: `read-cap-${i}`, layoutId, lid: 4, address: '/004', type: 'Index', value: i % 3, ts: Date.now() };
          burst.xadd(key, '*', ACTION_FIELD, encodeActionEntry(entry));
        }
        await burst.exec();
        await eventually(() => sink.messages.length >= total, 10_000);
      } finally {
        await bridge.stop();
        await sink.stop();
      }
    });
    expect(counts.length).toBeGreaterThan(total / 64 - 1);
    expect(Math.max(...counts)).toBe(64);
  });

  it('never asks for more entries than fit in the backlog, and still delivers a backlog of 600', async () => {
    const prefix = randomPrefix();
    const layoutId = 'read-size';
    const key = actionStreamKey(prefix, layoutId);
    const sink = new UdpSink();
    await sink.start();
    const total = 600;
    const counts = await readCounts(key, async (c) => {
      // 10 messages a tick: the backlog holds 20
      const { bridge } = await startTestBridge({ redisUrl: redis.get().server.url, prefix, layouts: [{ layoutId, tickHz: 100, maxMessagesPerTick: 10, targets: [{ host: '127.0.0.1', port: sink.port }] }] });
      try {
        const burst = c.pipeline(); // all at once: a backlog far larger than 20
        for (let i = 0; i < total; i++) {
          const entry: ActionEntry = { v: 1, id: `read-size-${i}`, layoutId, lid: 4, address: '/004', type: 'Index', value: i % 3, ts: Date.now() };
          burst.xadd(key, '*', ACTION_FIELD, encodeActionEntry(entry));
        }
        await burst.exec();
        await eventually(() => sink.messages.length >= total, 10_000);
        expect(sink.messages.map((m) => m.args[0]?.value)).toEqual(Array.from({ length: total }, (_, i) => i % 3));
      } finally {
        await bridge.stop();
        await sink.stop();
      }
    });
    expect(counts.length).toBeGreaterThan(0);
    expect(Math.max(...counts)).toBeLessThanOrEqual(20);
  });
});
