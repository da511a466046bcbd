/**
 * How long a wait for something that must happen may take: a loaded 2-core machine (CI, a test
 * file beside it) can keep a process off the CPU for seconds, so a condition that holds in 50 ms
 * on a quiet machine gets this long before the test calls it broken. A test that claims a latency
 * measures it instead, and takes away the slower path that would meet the condition too (a
 * re-check timer, a retry), so that the generous bound still tells the mechanisms apart.
 * `eventually`, the live helper's `next` and `expect.poll` (vitest.config.ts) all use it.
 */
export const LOADED_MACHINE_MS = 10_000;
