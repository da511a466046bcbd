// The bridge process's threads: the send schedule's two threads (the event loop and the tick clock)
// keep the normal policy, and every other thread (V8's compiler and GC helpers, libuv's pool) runs
// as SCHED_IDLE, so on a busy core it never holds a tick back; with --send-cpu the two keep to that
// CPU and the others to the rest, at the normal policy (there, SCHED_IDLE would only make the event
// loop wait for a helper starved by whatever else runs on those CPUs). Read from /proc, as `top -H` would.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { threadsOf } from '../../bench/harness.js';
import { allowedCpus, prioritiseSendPath } from '../../bridge/thread-priority.js';
import { BRIDGE_BIN, BRIDGE_COMMAND, configFile, runBridge, spawnBridge, stopProcess } from '../helpers/bridge.js';
import { killAfterEach } from '../helpers/processes.js';
import { useRedis } from '../helpers/redis.js';
import { UdpSink } from '../helpers/udp-sink.js';

const SCHED_OTHER = 0;
const SCHED_IDLE = 5;

const redis = useRedis();
const track = killAfterEach();

describe('the bridge process gives its send schedule the core first', () => {
  it('keeps the event loop and the tick clock at the normal policy and runs every other thread as SCHED_IDLE', async () => {
    const sink = new UdpSink();
    await sink.start();
    try {
      const file = configFile({ redisUrl: redis.get().server.url, prefix: 'tp:', layouts: [{ layoutId: 'show', tickHz: 1000, targets: [{ host: '127.0.0.1', port: sink.port }] }] });
      const { child, output } = await spawnBridge(['--config', file]);
      track(child);
      const threads = threadsOf(child.pid!);
      const main = threads.find((t) => t.tid === child.pid);
      const clock = threads.filter((t) => t.name === 'tick-clock');
      const others = threads.filter((t) => t !== main && !clock.includes(t));
      expect(main?.policy, JSON.stringify(threads)).toBe(SCHED_OTHER);
      expect(clock.map((t) => t.policy), JSON.stringify(threads)).toEqual([SCHED_OTHER]);
      // Node starts V8's platform threads (four on this machine) and more before the bridge runs
      expect(others.length, JSON.stringify(threads)).toBeGreaterThanOrEqual(4);
      expect(others.filter((t) => t.policy !== SCHED_IDLE), JSON.stringify(threads)).toEqual([]);
      expect(output()).toMatch(/helper threads yield to the send schedule/);
      expect(await stopProcess(child)).toBe(0);
    } finally {
      await sink.stop();
    }
  });

  it('run without --single-threaded-gc (node main.js, not its unit or shebang), keeps every thread at the normal policy and warns: each scavenge waits for the helpers', async () => {
    const sink = new UdpSink();
    await sink.start();
    try {
      const file = configFile({ redisUrl: redis.get().server.url, prefix: 'tp6:', layouts: [{ layoutId: 'show', targets: [{ host: '127.0.0.1', port: sink.port }] }] });
      const { child, output } = await spawnBridge(['--config', file], {}, 10_000, [process.execPath, BRIDGE_BIN]);
      track(child);
      const threads = threadsOf(child.pid!);
      expect(threads.length, JSON.stringify(threads)).toBeGreaterThanOrEqual(6);
      expect(threads.filter((t) => t.policy !== SCHED_OTHER || t.nice !== 0), JSON.stringify(threads)).toEqual([]);
      expect(output()).toMatch(/"skipped":"V8 collects with helper threads[^"]*--single-threaded-gc/);
      expect(output()).toMatch(/helper threads keep their priority or CPU/);
      expect(await stopProcess(child)).toBe(0);
    } finally {
      await sink.stop();
    }
  });

  it('gives the other threads nice 19 where chrt cannot run, and says so', async () => {
    const sink = new UdpSink();
    await sink.start();
    try {
      const file = configFile({ redisUrl: redis.get().server.url, prefix: 'tp4:', layouts: [{ layoutId: 'show', targets: [{ host: '127.0.0.1', port: sink.port }] }] });
      // a PATH with no chrt on it (the bridge itself needs nothing from PATH without NOTIFY_SOCKET)
      const { child, output } = await spawnBridge(['--config', file], { PATH: '/nonexistent' });
      track(child);
      const threads = threadsOf(child.pid!);
      const others = threads.filter((t) => t.tid !== child.pid && t.name !== 'tick-clock');
      expect(others.length, JSON.stringify(threads)).toBeGreaterThanOrEqual(4);
      expect(others.filter((t) => t.policy !== SCHED_OTHER || t.nice !== 19), JSON.stringify(threads)).toEqual([]);
      expect(threads.filter((t) => !others.includes(t)).map((t) => t.nice)).toEqual([0, 0]);
      expect(output()).toMatch(new RegExp(`"idle":0,"nice":${others.length},"unchanged":0`));
      expect(await stopProcess(child)).toBe(0);
    } finally {
      await sink.stop();
    }
  });

  it('with --send-cpu, keeps the event loop and the tick clock on that CPU and every other thread on the rest, at the normal policy', async () => {
    const [first, second] = allowedCpus();
    expect(second, 'this test needs a machine with two CPUs').toBeDefined();
    const sink = new UdpSink();
    await sink.start();
    try {
      const file = configFile({ redisUrl: redis.get().server.url, prefix: 'tp2:', layouts: [{ layoutId: 'show', tickHz: 1000, targets: [{ host: '127.0.0.1', port: sink.port }] }] });
      const { child, output } = await spawnBridge(['--config', file, '--send-cpu', String(second)], {}, 10_000, ['taskset', '-c', `${first},${second}`, ...BRIDGE_COMMAND]);
      track(child);
      const threads = threadsOf(child.pid!);
      const send = threads.filter((t) => t.tid === child.pid || t.name === 'tick-clock');
      const others = threads.filter((t) => !send.includes(t));
      expect(send.map((t) => t.cpus), JSON.stringify(threads)).toEqual([String(second), String(second)]);
      expect(others.length, JSON.stringify(threads)).toBeGreaterThanOrEqual(4);
      // A helper the event loop waits for (V8 stops every thread that touches the heap before it
      // collects) must not be starved there by a busy CPU: SCHED_IDLE made scavenges of up to 42 ms.
      expect(others.filter((t) => t.cpus !== String(first) || t.policy !== SCHED_OTHER), JSON.stringify(threads)).toEqual([]);
      expect(output()).toContain(`"sendCpu":${second},"helperCpus":"${first}"`);
      expect(output()).toMatch(/helper threads keep off the send path's CPU/);
      expect(await stopProcess(child)).toBe(0);
    } finally {
      await sink.stop();
    }
  });

  it('with --send-cpu, lets a helper thread that cannot be moved off that CPU yield instead, and warns', async () => {
    const [first, second] = allowedCpus();
    expect(second, 'this test needs a machine with two CPUs').toBeDefined();
    // A taskset on PATH that places the event loop and the tick clock but refuses every other thread
    // (as a seccomp filter or a cgroup might): those stay on the send path's CPU.
    const bin = mkdtempSync(join(tmpdir(), 'ac-taskset-'));
    writeFileSync(
      join(bin, 'taskset'),
      `#!/bin/sh
tid="$4"
if [ "$tid" != "$(awk '/^Tgid:/ { print $2 }' /proc/$tid/status)" ] && [ "$(cat /proc/$tid/comm)" != tick-clock ]; then echo "taskset: refused" >&2; exit 1; fi
exec /usr/bin/taskset "$@"
`,
    );
    chmodSync(join(bin, 'taskset'), 0o755);
    const sink = new UdpSink();
    await sink.start();
    try {
      const file = configFile({ redisUrl: redis.get().server.url, prefix: 'tp5:', layouts: [{ layoutId: 'show', targets: [{ host: '127.0.0.1', port: sink.port }] }] });
      const { child, output } = await spawnBridge(['--config', file, '--send-cpu', String(second)], { PATH: `${bin}:${process.env.PATH ?? ''}` }, 10_000, ['/usr/bin/taskset', '-c', `${first},${second}`, ...BRIDGE_COMMAND]);
      track(child);
      const threads = threadsOf(child.pid!);
      const send = threads.filter((t) => t.tid === child.pid || t.name === 'tick-clock');
      const others = threads.filter((t) => !send.includes(t));
      expect(send.map((t) => t.cpus), JSON.stringify(threads)).toEqual([String(second), String(second)]);
      expect(others.length, JSON.stringify(threads)).toBeGreaterThanOrEqual(4);
      expect(others.filter((t) => t.policy !== SCHED_IDLE), JSON.stringify(threads)).toEqual([]);
      expect(output()).toContain(`"idle":${others.length},"nice":0,"unchanged":0,"unplaced":${others.length}`);
      expect(output()).toMatch(/helper threads keep their priority or CPU/);
      expect(await stopProcess(child)).toBe(0);
    } finally {
      await sink.stop();
      rmSync(bin, { recursive: true, force: true });
    }
  });

  it('refuses a --send-cpu it may not use, or one that would leave its other threads no CPU, before it connects', async () => {
    const [first] = allowedCpus();
    const file = configFile({ redisUrl: 'redis://127.0.0.1:1', prefix: 'tp3:', layouts: [{ layoutId: 'show', targets: [{ host: '127.0.0.1', port: 9 }] }] });
    const notAllowed = await runBridge(['--config', file, '--send-cpu', '4095']);
    expect(notAllowed.code).toBe(1);
    expect(notAllowed.stderr).toMatch(/sendCpu 4095 is not one of the CPUs this process may use/);
    const alone = await runBridge(['--config', file, '--send-cpu', String(first)], {}, ['taskset', '-c', String(first), ...BRIDGE_COMMAND]);
    expect(alone.code).toBe(1);
    expect(alone.stderr).toMatch(new RegExp(`sendCpu ${first} is the only CPU this process may use`));
  });
});

describe('prioritiseSendPath', () => {
  it("changes nothing when it does not know the tick clock's thread, which would otherwise be demoted with the helpers", async () => {
    const before = threadsOf(process.pid);
    expect(await prioritiseSendPath(0)).toEqual({ idle: 0, nice: 0, unchanged: 0, unplaced: 0, skipped: "the tick clock's thread id is unknown" });
    expect(threadsOf(process.pid).filter((t) => before.some((b) => b.tid === t.tid && b.policy !== t.policy))).toEqual([]);
  });
});

describe('allowedCpus', () => {
  it('reads the kernel\'s list of ranges', () => {
    expect(allowedCpus('Name:\tnode\nCpus_allowed_list:\t0-3,6,8-9\n')).toEqual([0, 1, 2, 3, 6, 8, 9]);
    expect(allowedCpus('Cpus_allowed_list:\t5\n')).toEqual([5]);
  });
});
