// The door of the live channel while the process's event loop is stuck in one long turn: the
// upgrades that arrive together in a reconnect storm are all worked in the turn they arrive in, so
// past BUSY_TURN_MS of one turn the door refuses new ones (503, Retry-After 1) and the turn ends.
// The loop here is held by this test's own synchronous work, as a storm's upgrades hold it.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { Admission, BUSY_TURN_MS } from '../../gateway/live/admission.js';
import { AppError } from '../../gateway/errors.js';

const admissions: Admission[] = [];
afterEach(() => {
  for (const a of admissions.splice(0)) a.stop();
});

function admission(): Admission {
  const a = new Admission({ maxSockets: 100, newSocketsPerSecond: 1000, opensPerParticipantPerMinute: 30, refusedUpgradesPerAddressPerSecond: 10, now: Date.now }, () => 0);
  admissions.push(a);
  return a;
}

/** Holds the event loop in this turn for `ms`. */
function holdTheLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

function refusal(run: () => void): AppError | null {
  try {
    run();
    return null;
  } catch (e) {
    if (e instanceof AppError) return e;
    throw e;
  }
}

describe('the live door in a long turn of the event loop', () => {
  it('admits while the loop turns, refuses with 503 and Retry-After 1 once one turn ran past BUSY_TURN_MS, and admits again when the loop turned', async () => {
    const a = admission();
    await sleep(120); // the loop turns: its timer marks it
    expect(refusal(() => a.process())).toBeNull();
    holdTheLoop(BUSY_TURN_MS + 100);
    const refused = refusal(() => a.process());
    expect([refused?.code, refused?.status, refused?.headers]).toEqual(['unavailable', 503, [['retry-after', '1']]]);
    expect(refused?.message).toMatch(/busy/);
    await sleep(120);
    expect(refusal(() => a.process())).toBeNull();
  });

  it('a turn shorter than BUSY_TURN_MS refuses nothing', async () => {
    const a = admission();
    await sleep(120);
    holdTheLoop(BUSY_TURN_MS / 5);
    expect(refusal(() => a.process())).toBeNull();
  });
});
