// The reader gives way to the send schedule: it waits for the next tick through afterNextTick(),
// which must resolve once that tick ran, and never leave a reader waiting after the loop stopped.
import { describe, expect, it } from 'vitest';
import { BridgeCounters } from '../../bridge/counters.js';
import { LayoutScheduler } from '../../bridge/scheduler.js';
import { createLogger } from '../../runtime/log.js';

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
});
