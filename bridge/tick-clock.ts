// The send loop's clock: waiting until a tick is due, to a fraction of a millisecond.

/**
 * A timer fires on the event loop's millisecond clock, up to about 1 ms after it was due; the last
 * stretch before a tick is waited out in setImmediate turns (I/O keeps flowing between them), so a
 * tick starts within a fraction of a millisecond of its schedule. Costs up to this share of every
 * tick period in CPU.
 */
const SPIN_MS = 1;

/** Waits until performance.now() reaches `due`: a timer for most of the way, then event-loop turns. */
export async function sleepUntil(due: number): Promise<void> {
  const coarse = due - performance.now() - SPIN_MS;
  if (coarse >= 1) await new Promise((r) => setTimeout(r, coarse));
  while (performance.now() < due) await new Promise((r) => setImmediate(r));
}
