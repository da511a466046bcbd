// The reader gives way to the send schedule: near a due tick it waits for it (afterNextTick), which
// must resolve once that tick ran, and never leave a reader waiting after the loop stopped.
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { LayoutConsumer } from '../../bridge/consumer.js';
import { BridgeCounters } from '../../bridge/counters.js';
import { LayoutScheduler } from '../../bridge/scheduler.js';
import { createLogger } from '../../runtime/log.js';
import { ACTION_FIELD, encodeActionEntry } from '../../schemas/action-entry.js';
import { actionStreamKey } from '../../schemas/redis-keys.js';
import { eventually } from '../helpers/gateway.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';

const redis = useRedis();

function scheduler(tickHz: number): { s: LayoutScheduler; counters: BridgeCounters } {
  const counters = new BridgeCounters();
  const settings = { layoutId: 'tick-budget', tickHz, playoutDelayMs: 0, maxAgeMs: 2000, maxMessagesPerTick: 100, targets: [] };
  return { s: new LayoutScheduler(settings, async () => {}, counters, createLogger('test', 'silent')), counters };
}

describe('the send schedule and the reader', () => {
  it('afterNextTick() resolves after the next tick has run, and nextDue names when it is due', async () => {
    const { s } = scheduler(100);
    s.start();
    try {
      expect(s.ticking).toBe(true);
      await s.afterNextTick();
      const before = s.lastProgress;
      const due = s.nextDue;
      expect(due).toBeGreaterThan(0);
      await s.afterNextTick();
      expect(s.lastProgress).toBeGreaterThan(before); // a tick completed in between
      expect(performance.now()).toBeGreaterThanOrEqual(due);
    } finally {
      await s.stop(0);
    }
  });

  it('a reader waiting when the loop stops is released, and ticking says the loop is gone', async () => {
    const { s } = scheduler(1);
    s.start();
    await new Promise((r) => setTimeout(r, 10));
    const waiting = s.afterNextTick(); // the next tick is about a second away
    await s.stop(0);
    await waiting;
    expect(s.ticking).toBe(false);
  });

  it('a reader with a tick due stops after 31 entries and reads on once the tick is past', async () => {
    const { s: sched, counters } = scheduler(0.2); // the first real tick is 5 s away
    const prefix = randomPrefix();
    const reader = new Redis(redis.get().server.url);
    const ops = new Redis(redis.get().server.url);
    const log = createLogger('test', 'silent');
    const settings = { prefix, bridgeId: 'yield-test', blockMs: 200, count: 256, maxBacklog: 1000, reclaimIdleMs: 30_000, deadLetterMaxLen: 1000 };
    const consumer = new LayoutConsumer(reader, ops, sched, settings, counters, log);
    try {
      await consumer.ensureGroup();
      const burst = ops.pipeline();
      for (let i = 0; i < 100; i++) {
        const entry = { v: 1 as const, id: `yield-${i}`, layoutId: 'tick-budget', lid: 4, address: '/004', type: 'Index' as const, value: 1, ts: Date.now() };
        burst.xadd(actionStreamKey(prefix, 'tick-budget'), '*', ACTION_FIELD, encodeActionEntry(entry));
      }
      await burst.exec();
      sched.start();
      await eventually(() => sched.nextDue < Infinity, 3000); // the loop runs once its clock does
      sched.nextDue = performance.now(); // as if a tick were due now
      consumer.start();
      await eventually(() => sched.pending() >= 31, 3000);
      await new Promise((r) => setTimeout(r, 300));
      expect(sched.pending()).toBe(31); // waiting for the tick, not reading on
      await sched.stop(0); // the loop ends: no tick will come, so the reader goes on
      await eventually(() => sched.pending() === 100, 3000);
    } finally {
      await consumer.stop();
      reader.disconnect();
      ops.disconnect();
    }
  });
});
