// The reader gives way to the send schedule: once a tick is due it reads no further entry and waits
// for it (the TickLoop's afterNext), which must resolve once that tick ran, and never leave a reader waiting
// after the loop stopped.
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

function scheduler(tickHz: number, ack: (ids: string[]) => Promise<void> = async () => {}): { s: LayoutScheduler; counters: BridgeCounters } {
  const counters = new BridgeCounters();
  const settings = { layoutId: 'tick-budget', tickHz, playoutDelayMs: 0, maxAgeMs: 2000, maxMessagesPerTick: 100, targets: [] };
  return { s: new LayoutScheduler(settings, ack, counters, createLogger('test', 'silent')), counters };
}

/**
 * The ticks `s` has completed, counted as they end: lastProgress is in whole ms, and a tick that
 * runs at once after one that overran ends within the same ms as it.
 */
function tickCount(s: LayoutScheduler, firstTakesMs = 0): () => number {
  const tick = s.tick.bind(s);
  let ended = 0;
  s.tick = async () => {
    if (ended === 0 && firstTakesMs > 0) {
      const until = performance.now() + firstTakesMs; // the machine keeps this tick on past the next one's due time
      while (performance.now() < until);
    }
    await tick();
    ended++;
  };
  return () => ended;
}

const entry = (i: number) => ({ v: 1 as const, id: `ack-${i}`, layoutId: 'tick-budget', lid: 4, address: '/004', type: 'Index' as const, value: 1, ts: Date.now() });

describe('the send schedule and the reader', () => {
  // the first tick on time; then one that overran, so the next is due at once and ends within the same ms
  for (const firstTakesMs of [0, 15]) {
    it(`afterNext() resolves after the next tick has run, and nextDue names when it is due (first tick ${firstTakesMs} ms)`, async () => {
      const { s } = scheduler(100);
      const ticks = tickCount(s, firstTakesMs);
      s.start();
      try {
        await s.clock.afterNext();
        const before = { ticks: ticks(), progress: s.lastProgress };
        const due = s.clock.nextDue;
        expect(due).toBeGreaterThan(0);
        await s.clock.afterNext();
        expect(ticks()).toBeGreaterThan(before.ticks); // the next tick completed in between
        expect(s.lastProgress).toBeGreaterThanOrEqual(before.progress);
        expect(performance.now()).toBeGreaterThanOrEqual(due);
      } finally {
        await s.stop(0);
      }
    });
  }

  it('a reader waiting when the loop stops is released, and no tick is due once the loop is gone', async () => {
    const { s } = scheduler(1);
    s.start();
    await new Promise((r) => setTimeout(r, 10));
    const waiting = s.clock.afterNext(); // the next tick is about a second away
    await s.stop(0);
    await waiting;
    s.clock.nextDue = performance.now() - 1; // even with a due time in the past: no loop, no tick to wait for
    expect(s.clock.due()).toBe(false);
  });

  it("a tick's XACK in flight holds neither the reader nor the next ticks; one XACK at a time takes what waited", async () => {
    const calls: string[][] = [];
    let answer = (): void => {};
    const { s } = scheduler(100, (ids) => {
      calls.push(ids);
      return new Promise<void>((r) => (answer = r)); // Redis is slow: no reply until the test says so
    });
    const ticks = tickCount(s);
    s.start();
    try {
      await eventually(() => s.clock.nextDue < Infinity);
      s.ackLater('1-1');
      await eventually(() => calls.length === 1);
      const ended = ticks();
      for (let i = 0; i < 3; i++) await s.clock.afterNext(); // released tick after tick though the XACK hangs
      expect(ticks()).toBeGreaterThanOrEqual(ended + 3);
      s.ackLater('2-1');
      s.ackLater('3-1');
      for (let i = 0; i < 3; i++) await s.clock.afterNext();
      expect(calls).toEqual([['1-1']]); // never two at once
      answer();
      await eventually(() => calls.length === 2);
      expect(calls[1]).toEqual(['2-1', '3-1']);
      answer();
    } finally {
      await s.stop(0);
    }
  });

  it('stop() waits for the XACK in flight and acks what is left', async () => {
    const calls: string[][] = [];
    const { s } = scheduler(100, async (ids) => {
      calls.push(ids);
      await new Promise((r) => setTimeout(r, 200));
    });
    s.start();
    await eventually(() => s.clock.nextDue < Infinity);
    s.ackLater('1-1');
    await eventually(() => calls.length === 1);
    s.ackLater('2-1');
    await s.stop(0);
    expect(calls).toEqual([['1-1'], ['2-1']]);
    expect(s.offer('9-1', entry(9)).kind).toBe('queued'); // still usable: nothing thrown
  });

  it('a reader with a tick due reads no further entry, and reads on once the tick is past', async () => {
    const { s: sched, counters } = scheduler(0.2); // the first real tick is 5 s away
    const prefix = randomPrefix();
    const reader = new Redis(redis.get().server.url);
    const ops = new Redis(redis.get().server.url);
    const log = createLogger('test', 'silent');
    const settings = { prefix, bridgeId: 'yield-test', blockMs: 200, readTimeoutMs: 2000, count: 256, maxBacklog: 1000, reclaimIdleMs: 30_000, deadLetterMaxLen: 1000 };
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
      await eventually(() => sched.clock.nextDue < Infinity); // the loop runs once its clock does
      sched.clock.nextDue = performance.now(); // as if a tick were due now
      consumer.start();
      await new Promise((r) => setTimeout(r, 300));
      expect(sched.pending()).toBe(0); // waiting for the tick, not reading on
      expect(counters.layout('tick-budget').read).toBe(0);
      await sched.stop(0); // the loop ends: no tick will come, so the reader goes on
      await eventually(() => sched.pending() === 100);
    } finally {
      await consumer.stop();
      reader.disconnect();
      ops.disconnect();
    }
  });
});
