// Bridge throughput and tick jitter on this machine: the bridge (in this process) on core 0,
// Redis and a counting UDP sink on core 1. A backlog drained twice: by a bridge just started (V8
// optimises its code on helper threads while it drains, which delays ticks), then by the same
// bridge, running since, whose stream is replaced by a full one (a backlog built up at once).
// Then steady input, and 2 s idle: the bridge's own CPU between ticks.
//   npm run bench -- bridge [--actions 200000 --tick-hz 100] [--v8-defaults: without BRIDGE_NODE_FLAGS]
//     [--helpers-keep-priority: the bridge's threads left as they are: neither placed nor made
//      SCHED_IDLE, see bridge/thread-priority.ts]
//     [--helpers-on-send-cpu: every thread of the bridge on core 0, instead of its send path on core 0
//      (sendCpu 0) and its other threads on core 1]
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { constants, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { startBridge, type Bridge } from '../bridge/app.js';
import { BRIDGE_NODE_FLAGS } from '../bridge/node-flags.js';
import { loadBridgeConfig } from '../bridge/config.js';
import { createLogger } from '../runtime/log.js';
import { entryId } from '../gateway/store/entry-id.js';
import { ACTION_FIELD, encodeActionEntry } from '../schemas/action-entry.js';
import { actionStreamKey } from '../schemas/redis-keys.js';
import { pinProcess, pinnedRedis, spawnPinned, threadsOf } from './harness.js';

const { values } = parseArgs({
  options: { actions: { type: 'string', default: '200000' }, 'tick-hz': { type: 'string', default: '100' }, 'per-tick': { type: 'string', default: '1000' }, 'read-count': { type: 'string' }, 'v8-defaults': { type: 'boolean', default: false }, 'helpers-keep-priority': { type: 'boolean', default: false }, 'helpers-on-send-cpu': { type: 'boolean', default: false } },
});
const total = Number(values.actions);
const tickHz = Number(values['tick-hz']);
const perTick = Number(values['per-tick']);

function progress(what: string): void {
  process.stderr.write(`bench: ${what}\n`);
}

async function main(): Promise<void> {
  // The send path (event loop and tick clock) keeps to core 0 (sendCpu), the bridge's other threads
  // to core 1, as on a venue host given --send-cpu; or, to compare, every thread on core 0.
  const sharedCore = values['helpers-on-send-cpu'];
  await pinProcess(sharedCore ? 0 : '0,1');
  const redis = await pinnedRedis(1);
  const sink = spawn('taskset', ['-c', '1', process.execPath, fileURLToPath(new URL('./udp-counter.js', import.meta.url))], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: sink.stdout });
  const nextLine = () => new Promise<string>((r) => lines.once('line', r));
  const port = Number((await nextLine()).split(' ')[1]);
  /** The sink's counts so far; `reset` zeroes them first (it answers with zeros). */
  const counts = async (reset = false) => {
    sink.stdin.write(reset ? 'reset\n' : '\n');
    return JSON.parse(await nextLine()) as { datagrams: number; messages: number; bytes: number; first: number; last: number };
  };
  const c = new Redis(redis.url);
  const key = actionStreamKey('ac:', 'bench-show');
  const group = 'bridge:bench';
  /** Writes the backlog to `into` (the bridge's stream, or one that replaces it whole), from a process on core 1. */
  const writeBacklog = async (into = key) => {
    progress(`writing ${total} discrete actions to the stream`);
    const { child } = await spawnPinned(1, fileURLToPath(new URL('./write-backlog.js', import.meta.url)), [redis.url, into, group, String(total)], {}, /wrote \d+/);
    if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
  };
  const config = loadBridgeConfig(
    { layout: 'bench-show', target: [`127.0.0.1:${port}`], redis: redis.url, bridgeId: 'bench', tickHz: String(tickHz), maxAgeMs: '600000' },
    { LOG_LEVEL: 'warn' },
  );
  const layouts = config.layouts.map((l) => ({ ...l, maxMessagesPerTick: perTick }));
  const startOne = (): Promise<Bridge> => startBridge({ ...config, layouts, opsPort: 0, ...(!sharedCore && { sendCpu: 0 }) }, { log: createLogger('audience-bridge', 'warn'), notifyEnv: {}, prioritiseSendPath: !values['helpers-keep-priority'], ...(values['read-count'] && { readCount: Number(values['read-count']) }) });
  /**
   * Measures a drain until the sink has every message (counting from zero): `begin` gives it the
   * backlog, by starting a bridge on it or by handing a running bridge a full stream.
   */
  const drain = async (what: string, begin: () => Promise<Bridge>) => {
    progress(`draining (${what}) with tickHz ${tickHz}, at most ${perTick} messages a tick`);
    await counts(true);
    const started = performance.now();
    const bridge = await begin();
    const drainTicks = watchLateTicks(bridge.counters);
    let got = await counts();
    while (got.messages < total && performance.now() - started < 120_000) {
      await new Promise((r) => setTimeout(r, 200));
      got = await counts();
    }
    return { bridge, got, lateness: bridge.counters.latencyPercentiles(), lateReport: drainTicks.stop() };
  };
  try {
    await writeBacklog();
    const cold = await drain('a bridge just started: V8 optimises its code meanwhile', startOne);
    const { bridge } = cold;
    // The same bridge, running since, gets a second backlog at once: the stream is replaced by one
    // holding 200,000 undelivered entries (RENAME wakes its blocked read). Its code is optimised,
    // as in a bridge that has been running when a backlog builds up.
    await new Promise((r) => setTimeout(r, 1000));
    await writeBacklog(`${key}:next`);
    const warm = await drain('the same bridge, running since', async () => {
      bridge.counters.resetLateness();
      await c.rename(`${key}:next`, key);
      return bridge;
    });

    progress('steady 2,000 actions/s for 5 s (20 every 10 ms, written from this process)');
    bridge.counters.resetLateness();
    const before = await counts();
    const steadyTotal = 10_000;
    let written = 0;
    const tsNow = () => Date.now();
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        const p = c.pipeline();
        for (let j = 0; j < 20; j++, written++) {
          p.xadd(key, '*', ACTION_FIELD, encodeActionEntry({ v: 1, id: entryId(), layoutId: 'bench-show', lid: 1, address: '/001', type: 'Button', value: null, ts: tsNow() }));
        }
        void p.exec();
        if (written >= steadyTotal) {
          clearInterval(timer);
          resolve();
        }
      }, 10);
    });
    await new Promise((r) => setTimeout(r, 500));
    const steady = bridge.counters.latencyPercentiles();
    const after = await counts();

    progress('idle for 2 s: what the bridge costs between ticks');
    const idleFrom = process.cpuUsage();
    const idleStart = performance.now();
    await new Promise((r) => setTimeout(r, 2000));
    const idleUse = process.cpuUsage(idleFrom);
    const idleShare = (idleUse.user + idleUse.system) / 1000 / (performance.now() - idleStart);
    await bridge.stop();
    const cpu = process.cpuUsage();
    // what bridge/thread-priority.ts did to the bridge's threads in this run
    const threads = values['helpers-keep-priority']
      ? 'threads left as they were (no placement, normal priority)'
      : sharedCore
        ? 'every thread of the bridge on core 0, its helper threads SCHED_IDLE'
        : "the bridge's send path on core 0 (sendCpu 0), its other threads on core 1 at normal priority";
    process.stdout.write(`\nmachine: 2 cores, Node ${process.version} ${process.execArgv.join(' ') || '(V8 defaults)'}, ${threads}, Redis and the UDP sink on core 1; CPU of the bridge's other threads ${helperCpuSeconds().toFixed(2)} s; peak RSS of this process ${Math.round(process.resourceUsage().maxRSS / 1024)} MiB\n\n`);
    process.stdout.write('| scenario | messages received | of sent | datagrams | messages/s | tick lateness p50 / p99 / max ms |\n|---|---|---|---|---|---|\n');
    for (const [name, d] of [[`drain ${total} queued discrete actions`, cold], [`drain ${total} again, warm`, warm]] as const) {
      const { got, lateness: l } = d;
      const rate = Math.round(got.messages / ((got.last - got.first) / 1000));
      process.stdout.write(`| ${name}, ${tickHz} Hz, ≤ ${perTick}/tick | ${got.messages} | ${((100 * got.messages) / total).toFixed(1)} % | ${got.datagrams} | ${rate} | ${l.p50.toFixed(2)} / ${l.p99.toFixed(2)} / ${l.max.toFixed(2)} |\n`);
    }
    process.stdout.write(
      `| steady 2,000 actions/s for 5 s, ${tickHz} Hz | ${after.messages - before.messages} | ${((100 * (after.messages - before.messages)) / steadyTotal).toFixed(1)} % | ${after.datagrams - before.datagrams} | ${Math.round((after.messages - before.messages) / 5)} | ${steady.p50.toFixed(2)} / ${steady.p99.toFixed(2)} / ${steady.max.toFixed(2)} |\n`,
    );
    process.stdout.write(`| idle 2 s, ${tickHz} Hz | - | - | - | - | CPU ${idleShare.toFixed(3)} of a core |\n`);
    process.stdout.write(`\ncold ${cold.lateReport}\nwarm ${warm.lateReport}\n`);
    process.stdout.write(`\nbench process CPU: ${((cpu.user + cpu.system) / 1e6).toFixed(1)} s; ceiling set by pacing: ${tickHz * perTick} messages/s\n`);
  } finally {
    c.disconnect();
    sink.kill();
    await redis.stop();
  }
}

/** CPU time of this process's threads but the main one and the tick clock, so far. */
function helperCpuSeconds(): number {
  return threadsOf(process.pid)
    .filter((t) => t.tid !== process.pid && t.name !== 'tick-clock')
    .reduce((sum, t) => sum + t.cpuSeconds, 0);
}

/**
 * Records the drain's ticks that start more than 1 ms late, and V8's GC pauses meanwhile, and says
 * how many of those ticks a pause overlapped: what GC explains of the tail, and what it does not.
 */
function watchLateTicks(counters: { onLateness: (ms: number) => void }): { stop(): string } {
  const pauses: { start: number; end: number; kind: number }[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries() as (PerformanceEntry & { detail: { kind: number } })[]) pauses.push({ start: e.startTime, end: e.startTime + e.duration, kind: e.detail.kind });
  });
  observer.observe({ entryTypes: ['gc'] });
  const late: { due: number; started: number }[] = [];
  let ticks = 0;
  const told = counters.onLateness;
  counters.onLateness = (ms) => {
    told(ms);
    ticks++;
    if (ms > 1) {
      const started = performance.now();
      late.push({ due: started - ms, started });
    }
  };
  return {
    stop() {
      counters.onLateness = told;
      observer.disconnect();
      const during = (t: { due: number; started: number }) => pauses.find((p) => p.start < t.started && p.end > t.due);
      const byGc = late.map(during);
      const scavenge = byGc.filter((p) => p?.kind === constants.NODE_PERFORMANCE_GC_MINOR).length;
      const other = byGc.filter((p) => p !== undefined).length - scavenge;
      const total = pauses.reduce((n, p) => n + (p.end - p.start), 0);
      return (
        `drain: ${late.length} of ${ticks} ticks started more than 1 ms late; a GC pause overlapped ${scavenge} of them (scavenge) and ${other} (mark-compact or its steps), ` +
        `none the other ${late.length - scavenge - other}. GC during the drain: ${pauses.length} pauses, ${total.toFixed(0)} ms in all, the longest ${Math.max(0, ...pauses.map((p) => p.end - p.start)).toFixed(1)} ms`
      );
    },
  };
}

/** The bridge runs with its unit's Node flags: without them (and without --v8-defaults), this script starts itself again with them. */
const missing = values['v8-defaults'] ? [] : BRIDGE_NODE_FLAGS.filter((f) => !process.execArgv.includes(f));
if (missing.length > 0) {
  const self = spawn(process.execPath, [...process.execArgv, ...missing, fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => self.kill(signal));
  self.on('exit', (code) => process.exit(code ?? 1));
} else {
  main().catch((e: unknown) => {
    process.stderr.write(`bench: ${String(e)}\n`);
    process.exit(1);
  });
}
