// The bridge process's threads: the send schedule's two threads (the event loop and the tick clock)
// keep the normal policy, and every other thread (V8's compiler and GC helpers, libuv's pool) runs
// as SCHED_IDLE, so on a busy core it never holds a tick back. Read from /proc, as `top -H` would.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configFile, spawnBridge, stopProcess } from '../helpers/bridge.js';
import { killAfterEach } from '../helpers/processes.js';
import { useRedis } from '../helpers/redis.js';
import { UdpSink } from '../helpers/udp-sink.js';

const SCHED_OTHER = 0;
const SCHED_IDLE = 5;

const redis = useRedis();
const track = killAfterEach();

interface ThreadInfo {
  tid: number;
  name: string;
  policy: number;
}

/** Every thread of `pid`: its name (comm) and scheduling policy (field 41 of its stat line). */
function threadsOf(pid: number): ThreadInfo[] {
  return readdirSync(`/proc/${pid}/task`).map((t) => {
    const stat = readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8');
    // the name is in parentheses and may hold spaces: the fields after it start at field 3
    const after = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { tid: Number(t), name: readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').trim(), policy: Number(after[41 - 3]) };
  });
}

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
});
