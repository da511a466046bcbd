// The send loop's clock: waiting until a tick is due, to a fraction of a millisecond, asleep.
//
// A Node timer fires on the event loop's millisecond clock, up to about 1 ms after it was due, so a
// timer alone cannot start a 1000 Hz tick on time. The last millisecond used to be waited out in
// setImmediate turns, which kept a whole core busy on an idle bridge at 1000 Hz (0.99 of a core,
// 0.19 at 100 Hz), taken from Redis and everything else on the host. Instead one worker thread
// sleeps in Atomics.wait (a futex, with microsecond resolution) until the earliest wait is due and
// then posts a message, which wakes this thread's event loop like any I/O: no turn is spent waiting,
// and reads keep flowing until the tick starts. Both threads read the same monotonic clock
// (process.hrtime); the earliest deadline is shared memory, and changing it wakes the worker.
import { Worker } from 'node:worker_threads';

/** Shared with the worker: [0] a generation that wakes it when bumped; the deadline (hrtime ns, 0 = none). */
interface Shared {
  generation: Int32Array;
  deadline: BigInt64Array;
}

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
// Its name and thread id, for top -H and for the bridge, which keeps this thread's priority (see
// thread-priority.ts); the first message, before any wake.
let tid = 0;
try {
  const fs = require('node:fs');
  tid = Number(fs.readlinkSync('/proc/thread-self').split('/').pop());
  fs.writeFileSync('/proc/thread-self/comm', 'tick-clock');
} catch {} // not Linux: no thread ids to keep, and the name is only a courtesy
parentPort.postMessage({ tid });
const generation = new Int32Array(workerData.generation);
const deadline = new BigInt64Array(workerData.deadline);
for (;;) {
  const seen = Atomics.load(generation, 0);
  const due = Atomics.load(deadline, 0);
  if (due === 0n) { Atomics.wait(generation, 0, seen); continue; }
  const ms = Number(due - process.hrtime.bigint()) / 1e6;
  if (ms > 0) { Atomics.wait(generation, 0, seen, ms); continue; }
  Atomics.compareExchange(deadline, 0, due, 0n); // unless the main thread set another meanwhile
  parentPort.postMessage(0);
}
`;

interface Waiter {
  /** performance.now() time, as the callers count */
  due: number;
  wake: () => void;
}

interface Clock {
  worker: Worker;
  shared: Shared;
  /** resolves once the thread runs, with its thread id (0 where there is none to tell) */
  online: Promise<number>;
  /** the wait (its performance.now() due time) the thread's deadline was last set for */
  armedFor?: number;
}

let clock: Clock | null = null;
/** the waits in progress, earliest first */
const waiters: Waiter[] = [];

function startClock(): Clock {
  const generation = new SharedArrayBuffer(4);
  const deadline = new SharedArrayBuffer(8);
  const worker = new Worker(WORKER_SOURCE, { eval: true, name: 'tick-clock', workerData: { generation, deadline } });
  const shared = { generation: new Int32Array(generation), deadline: new BigInt64Array(deadline) };
  // The thread's first message is its id; every one after it, 0, a wake.
  const online = new Promise<number>((r) => {
    worker.once('message', (m: { tid: number }) => r(m.tid));
    worker.once('error', () => r(0)); // the schedule starts all the same, on timers
  });
  worker.on('message', (m: 0 | { tid: number }) => {
    if (m === 0) wakeDue();
  });
  worker.on('error', (e: Error) => {
    // Cannot happen short of a broken runtime. The waits still end, on Node timers (up to about
    // 1 ms late), and the next sleepUntil starts another thread. Said on stderr (the journal).
    process.emitWarning(`the tick clock's thread failed (${e.message}); the waiting ticks fall back to timers`, 'TickClockWarning');
    clock = null;
    const now = performance.now();
    for (const w of waiters.splice(0)) setTimeout(w.wake, Math.max(0, w.due - now + 1));
  });
  return { worker, shared, online };
}

/**
 * Wakes the waits that are due, then gives the worker the next deadline (or none, and lets the
 * process exit). The worker calls it; so may a thread that is awake anyway and keeps the time itself.
 */
export function wakeDue(): void {
  const now = performance.now();
  while (waiters.length > 0 && waiters[0]!.due <= now) waiters.shift()!.wake();
  armWorker();
}

function armWorker(): void {
  if (!clock) return;
  const { worker, shared } = clock;
  const next = waiters[0]?.due;
  const armed = Atomics.load(shared.deadline, 0);
  // Waking the thread costs a context switch: only when its deadline must change. (It clears a
  // deadline itself once due, and then tells this thread, which arms the next.)
  if (next === undefined ? armed !== 0n : next !== clock.armedFor || armed === 0n) {
    clock.armedFor = next;
    // performance.now() read before hrtime: the deadline errs late by the gap between them, never early
    const deadline = next === undefined ? 0n : BigInt(Math.max(1, Math.ceil((next - performance.now()) * 1e6))) + process.hrtime.bigint();
    Atomics.store(shared.deadline, 0, deadline);
    Atomics.add(shared.generation, 0, 1);
    Atomics.notify(shared.generation, 0);
  }
  if (waiters.length > 0) worker.ref();
  else worker.unref(); // an idle clock does not keep the process alive
}

/**
 * Starts the clock's thread ahead of the first wait (which would otherwise be late by its start-up);
 * resolves once it runs, with its thread id (0 where the platform has none to tell).
 */
export function tickClockReady(): Promise<number> {
  clock ??= startClock();
  if (waiters.length === 0) clock.worker.unref();
  return clock.online;
}

/** Waits until performance.now() reaches `due`; resolves at once for a time already past. */
export function sleepUntil(due: number): Promise<void> {
  const ms = due - performance.now();
  if (ms <= 0) return Promise.resolve();
  clock ??= startClock();
  return new Promise((wake) => {
    const w = { due, wake };
    let at = waiters.length;
    while (at > 0 && waiters[at - 1]!.due > w.due) at--;
    waiters.splice(at, 0, w);
    if (at === 0) armWorker(); // a new earliest deadline
  });
}
