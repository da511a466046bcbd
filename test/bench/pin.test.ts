// The benchmarks keep each process on its own core with pinProcess: the gateway or the bridge under
// test on core 0, Redis and the generators on core 1. A process has threads besides its main one
// (Redis's background I/O threads that fsync the AOF; V8's helper threads), and they must move too,
// or they run on the core under test and are billed to it.
import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { pinProcess, threadsOf } from '../../bench/harness.js';
import { eventually } from '../helpers/gateway.js';
import { killAfterEach } from '../helpers/processes.js';

function allowedCores(pid: number): string[] {
  return threadsOf(pid).map((t) => t.cpus);
}

/** Alive: a process whose parent has not yet collected it after its death (a zombie, state Z) is not. */
function running(pid: number): boolean {
  if (!existsSync(`/proc/${pid}`)) return false;
  const state = /\) (\S)/.exec(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.[1];
  return state !== undefined && state !== 'Z';
}

const tracked = killAfterEach();

describe('a benchmark that fails', () => {
  it('stops the servers it started through spawnPinned', async () => {
    // a bench script: starts the bare uWS server, says its pid, then fails before stopping it
    const harness = fileURLToPath(new URL('../../dist/bench/harness.js', import.meta.url));
    const bare = fileURLToPath(new URL('../../dist/bench/bare-uws.js', import.meta.url));
    const script = `const { spawnPinned } = await import(${JSON.stringify(harness)});
const s = await spawnPinned(0, ${JSON.stringify(bare)}, ['0'], {}, /listening (\\d+)/);
console.log('server', s.child.pid);
throw new Error('the load generator failed');`;
    const out = await new Promise<string>((resolve) => execFile(process.execPath, ['--input-type=module', '-e', script], { timeout: 20_000 }, (_err, stdout) => resolve(stdout)));
    const pid = Number(/server (\d+)/.exec(out)?.[1]);
    expect(pid).toBeGreaterThan(0);
    try {
      await eventually(() => !running(pid));
    } finally {
      if (running(pid)) process.kill(pid, 'SIGKILL');
    }
  });
});

describe('pinProcess', () => {
  it('moves every thread of a running process, not only its main thread', async () => {
    // a Node process with a worker thread, running before it is pinned (as Redis's threads are)
    const child = tracked(spawn(process.execPath, ['-e', "new (require('node:worker_threads').Worker)('setInterval(() => {}, 1000)', { eval: true }); setInterval(() => {}, 1000); setTimeout(() => console.log('up'), 200)"], { stdio: ['ignore', 'pipe', 'inherit'] }));
    await new Promise((r) => child.stdout.once('data', r));
    const pid = child.pid!;
    const last = String(availableParallelism() - 1);
    const before = allowedCores(pid);
    expect(before.length).toBeGreaterThan(2); // main, V8's helpers, the worker
    expect(before.every((c) => c === last)).toBe(false); // free to run anywhere yet (a machine of 2 cores or more)
    await pinProcess(last, pid);
    expect(allowedCores(pid)).toEqual(before.map(() => last));
  });
});
