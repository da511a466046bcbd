// The send schedule gets the core first. Two threads keep time: the event loop (reads, ticks,
// sends) and the tick clock (tick-clock.ts). Sharing their CPU, every other thread of the process
// (V8's compiler and GC helpers, libuv's pool) is made SCHED_IDLE: it runs only when no normal
// thread wants the core, and a waking tick preempts it at once. Lowering a thread's own priority
// needs no privilege; it is done once, at start, with util-linux's chrt (no Node API sets a
// thread's policy). Where chrt cannot, the thread gets nice 19 (os.setPriority of a thread id
// affects that thread only, on Linux).
//
// With `sendCpu`, the two also get a CPU of their own: they keep to that CPU, and every other thread
// to the other CPUs the process may use (util-linux's taskset). A helper that only yields still
// keeps the send path's CPU busy whenever the event loop waits, and on a virtual machine a vCPU
// that never idles is the one the host takes away: on this project's 2-core VM, a spin loop on one
// core lost 12 to 16 slices of 0.5 to 4 ms in 5 s while the other core was busy, and none while it
// was idle (bench/README.md). Draining a backlog at 1,000 Hz just after a start, tick lateness p99
// was 2.30 and 3.13 ms with V8's helpers on the send path's core, 0.98 and 0.54 ms with them on
// the other core (bench -- bridge, interleaved).
//
// Off the send path's CPU the helpers keep the normal policy, because the event loop sometimes
// waits for them: V8 stops every thread that holds the heap (its compiler threads) before it
// collects, and without --single-threaded-gc (node-flags.ts) waits for its helpers to finish their
// share of each young collection. A SCHED_IDLE helper on a CPU another process kept busy (Redis,
// in bench -- bridge) ran tens of milliseconds late, and the event loop with it: young collections of
// 15 to 42 ms and ticks as late, the event loop asleep in a futex until that helper ran (perf).
//
// Demoting the helpers is safe only when V8 collects on the event loop's thread alone: run without
// `--single-threaded-gc` (`node dist/bridge/main.js`, not its shebang or unit), each young
// collection waits for helpers that a SCHED_IDLE policy starves on a busy core. Beside olad, tshark
// and a gateway on 2 cores, such scavenges took up to 268 ms and a DMX universe lost a tenth of its
// frames for a second. So without the flag every thread keeps its policy, and the bridge warns.
//
// Threads started later (none, in a running bridge on this machine) keep the normal policy and the
// process's CPUs.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { setPriority } from 'node:os';
import { promisify } from 'node:util';
import { isMainThread } from 'node:worker_threads';

const run = promisify(execFile);

export interface SendPathPlacement {
  /** threads made SCHED_IDLE (with sendCpu, only those left on its CPU) */
  idle: number;
  /** threads given nice 19 instead (chrt failed for them) */
  nice: number;
  /** threads left as they were (both refused: a seccomp filter, say) */
  unchanged: number;
  /** with sendCpu: threads taskset could not move off the send path's CPU (they yield instead) */
  unplaced: number;
  /** the CPU of the event loop and the tick clock, and the CPUs of every other thread (sendCpu given) */
  sendCpu?: number;
  helperCpus?: string;
  /** why nothing was changed, if so */
  skipped?: string;
}

/** The CPUs this process may run on (Cpus_allowed_list of /proc/self/status, e.g. "0-3,6"). */
export function allowedCpus(status = readFileSync('/proc/self/status', 'utf8')): number[] {
  const list = /^Cpus_allowed_list:\s*(\S+)/m.exec(status)?.[1] ?? '';
  return list.split(',').flatMap((part) => {
    const [from = NaN, to = from] = part.split('-').map(Number);
    return Number.isNaN(from) || Number.isNaN(to) ? [] : Array.from({ length: to - from + 1 }, (_, i) => from + i);
  });
}

/** Why this process cannot give `sendCpu` to its send path (not a CPU it may use, or its only one), or null. */
export function sendCpuProblem(sendCpu: number): string | null {
  if (process.platform !== 'linux') return null; // nothing is placed there (see prioritiseSendPath)
  const allowed = allowedCpus();
  if (!allowed.includes(sendCpu)) return `sendCpu ${sendCpu} is not one of the CPUs this process may use (${allowed.join(',')})`;
  if (allowed.length === 1) return `sendCpu ${sendCpu} is the only CPU this process may use: its other threads would have none left`;
  return null;
}

/** V8 collects on the event loop's thread alone: Node was started with --single-threaded-gc (Node refuses it in NODE_OPTIONS). */
export function singleThreadedGc(execArgv = process.execArgv): boolean {
  return execArgv.includes('--single-threaded-gc');
}

/**
 * Without `sendCpu`, makes every thread of this process but the main one and `clockThread` yield the
 * core (SCHED_IDLE, else nice 19); with `sendCpu`, places the two on that CPU and the rest, at their
 * normal policy, on the other allowed CPUs. Throws for a `sendCpu` the process may not use, or one
 * that leaves no other CPU. Only on Linux, only from the process's main thread (a worker thread,
 * as in a test runner, would demote the thread that runs the bridge), and only when V8 collects on
 * that thread alone (`gcOnMainThread`: --single-threaded-gc); otherwise every thread stays as it is.
 */
export async function prioritiseSendPath(clockThread: number, sendCpu?: number, gcOnMainThread = singleThreadedGc()): Promise<SendPathPlacement> {
  const none = { idle: 0, nice: 0, unchanged: 0, unplaced: 0 };
  if (process.platform !== 'linux') return { ...none, skipped: `no thread ids on ${process.platform}` };
  if (!isMainThread) return { ...none, skipped: 'not the main thread of its process' };
  // Without the clock's id the clock would be demoted with the helpers: leave every thread as it is.
  if (!clockThread) return { ...none, skipped: "the tick clock's thread id is unknown" };
  if (!gcOnMainThread) return { ...none, skipped: 'V8 collects with helper threads (Node runs without --single-threaded-gc): the event loop waits for them in every young collection' };
  // libuv starts its pool's threads, all of them, at the pool's first job (a file read, a DNS
  // lookup), which may come after this: one job now, so they are here to be placed, not born later
  // at the normal policy on the send path's CPU
  await stat('/proc/self');
  const helpers = readdirSync('/proc/self/task')
    .map(Number)
    .filter((tid) => tid !== process.pid && tid !== clockThread);
  /** A call about `tid` failed: was it refused (the thread is still there), or did the thread end meanwhile? */
  const refused = (tid: number) => existsSync(`/proc/self/task/${tid}`);
  // Placed off the send path's CPU, a helper keeps its policy; one that stays on it (or every one,
  // without sendCpu) yields.
  let toDemote = helpers;
  let unplaced = 0;
  let placed: Pick<SendPathPlacement, 'sendCpu' | 'helperCpus'> = {};
  if (sendCpu !== undefined) {
    const problem = sendCpuProblem(sendCpu);
    if (problem) throw new Error(problem);
    const rest = allowedCpus()
      .filter((c) => c !== sendCpu)
      .join(',');
    const stayed: number[] = [];
    await Promise.all([
      ...[process.pid, clockThread].map((tid) => run('taskset', ['-p', '-c', String(sendCpu), String(tid)])),
      ...helpers.map((tid) =>
        run('taskset', ['-p', '-c', rest, String(tid)]).catch(() => {
          if (refused(tid)) stayed.push(tid);
        }),
      ),
    ]);
    toDemote = stayed;
    unplaced = stayed.length;
    placed = { sendCpu, helperCpus: rest };
  }
  const done = await Promise.all(
    toDemote.map((tid) =>
      run('chrt', ['--idle', '--pid', '0', String(tid)]).then(
        () => 'idle' as const,
        () => {
          try {
            setPriority(tid, 19);
            return 'nice' as const;
          } catch {
            return refused(tid) ? ('unchanged' as const) : ('gone' as const);
          }
        },
      ),
    ),
  );
  const count = (what: string) => done.filter((d) => d === what).length;
  return { idle: count('idle'), nice: count('nice'), unchanged: count('unchanged'), unplaced, ...placed };
}
