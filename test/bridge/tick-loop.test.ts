// The send loop's schedule (bridge/tick-loop.ts) on the real tick clock: a tick that throws is
// reported and the schedule goes on; failure() names the error for as long as ticks fail, and
// clears with the first tick that succeeds.
import { afterEach, describe, expect, it } from 'vitest';
import { TickLoop } from '../../bridge/tick-loop.js';
import { eventually } from '../helpers/gateway.js';

const loops: TickLoop[] = [];
afterEach(async () => {
  for (const l of loops.splice(0)) await l.stop();
});

describe('the tick loop', () => {
  it('goes on after ticks that throw, reports each, and says so in failure() until one succeeds', async () => {
    let ticks = 0;
    const failed: string[] = [];
    const late: number[] = [];
    let failing = true;
    const loop = new TickLoop(
      200,
      () => {
        ticks++;
        return failing ? Promise.reject(new Error(`display unreachable (tick ${ticks})`)) : Promise.resolve();
      },
      { late: (ms) => late.push(ms), failed: (e) => failed.push((e as Error).message), now: Date.now },
    );
    loops.push(loop);
    expect(loop.failure()).toBeNull();
    loop.start();
    await eventually(() => failed.length >= 3);
    const f = loop.failure();
    expect(f?.error).toMatch(/^display unreachable \(tick \d+\)$/);
    expect(f!.forMs).toBeGreaterThanOrEqual(0);
    await eventually(() => (loop.failure()?.forMs ?? 0) >= 20); // measured from the first failure on
    failing = false;
    const before = ticks;
    await eventually(() => ticks > before + 1);
    expect(loop.failure()).toBeNull();
    expect(failed.every((m) => m.startsWith('display unreachable'))).toBe(true);
    expect(late.length).toBeGreaterThanOrEqual(ticks - 1); // each scheduled tick reports its lateness
    expect(late.every((ms) => ms >= 0)).toBe(true);
  });

  it('runOnce() reports a throw instead of passing it on', async () => {
    const failed: unknown[] = [];
    const loop = new TickLoop(100, () => Promise.reject(new Error('boom')), { late: () => {}, failed: (e) => failed.push(e), now: Date.now });
    await expect(loop.runOnce()).resolves.toBeUndefined();
    expect(failed).toHaveLength(1);
    expect(loop.failure()?.error).toBe('boom');
  });
});
