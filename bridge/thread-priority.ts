// The send schedule gets the core first. Two threads keep time: the event loop (reads, ticks,
// sends) and the tick clock (tick-clock.ts). Every other thread of the process (V8's compiler and
// GC helpers, libuv's pool) is made SCHED_IDLE: it runs only when no normal thread wants the core,
// and a waking tick preempts it at once. On a core the bridge shares with them, V8's helpers
// otherwise held ticks back while they optimised the bridge's code (bench:bridge, 1,000 Hz: tick
// lateness p99 while draining 0.30 to 0.92 ms with this against 1.28 to 2.10 ms without, on a bridge
// already running; see bench/README.md). On a host with a free core they run there as before; on a
// busy one they wait, which delays optimised code and concurrent GC work, and a name lookup in
// libuv's pool, but never a tick. Lowering a thread's own priority needs no privilege; it is done
// once, at start, with util-linux's chrt (no Node API sets a thread's policy). Where chrt cannot,
// the thread gets nice 19 (os.setPriority of a thread id affects that thread only, on Linux).
// Threads started later (none, in a running bridge on this machine) keep the normal policy.
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { setPriority } from 'node:os';
import { promisify } from 'node:util';
import { isMainThread } from 'node:worker_threads';

export interface HelperThreadsYield {
  /** threads made SCHED_IDLE */
  idle: number;
  /** threads given nice 19 instead (chrt failed for them) */
  nice: number;
  /** why nothing was changed, if so */
  skipped?: string;
}

/**
 * Makes every thread of this process but the main one and `keep` yield the core (SCHED_IDLE, else
 * nice 19). Only on Linux, and only from the process's main thread (a worker thread, as in a test
 * runner, would demote the thread that runs the bridge).
 */
export async function yieldHelperThreads(keep: readonly number[]): Promise<HelperThreadsYield> {
  if (process.platform !== 'linux') return { idle: 0, nice: 0, skipped: `no thread ids on ${process.platform}` };
  if (!isMainThread) return { idle: 0, nice: 0, skipped: 'not the main thread of its process' };
  const helpers = readdirSync('/proc/self/task')
    .map(Number)
    .filter((tid) => tid !== process.pid && !keep.includes(tid));
  const done = await Promise.all(
    helpers.map((tid) =>
      promisify(execFile)('chrt', ['--idle', '--pid', '0', String(tid)]).then(
        () => 'idle' as const,
        () => {
          try {
            setPriority(tid, 19);
            return 'nice' as const;
          } catch {
            return 'gone' as const; // it ended meanwhile
          }
        },
      ),
    ),
  );
  return { idle: done.filter((d) => d === 'idle').length, nice: done.filter((d) => d === 'nice').length };
}
