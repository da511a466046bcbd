// Bench plumbing: processes pinned to cores, an embedded Redis, what /proc says of them, and the
// autocannon and wrk runs. What the benches play (the demo's data, tokens, the request mix) is in
// audience.ts.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { freePort, startRedisServer, type RedisServer } from '../dev/redis-server.js';
import { BENCH_LIMITS } from './limits.js';
import { GATEWAY_NODE_FLAGS } from '../gateway/node-flags.js';
import { ensureKekFile } from '../gateway/store/signing-kek.js';

/** The servers spawnPinned started that are still running: a bench that fails before stopping them kills them as it exits. */
const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * Spawns `node [nodeArgs] file args` on the given CPU core (taskset), resolving once it prints
 * `marker`. `core` is one core, or a list taskset takes ('0-1'); `stdin`: give it a pipe to write to.
 */
/**
 * The bench's gateways (every gateway it starts inherits this process's environment) seal their
 * signing keys under a key-encryption key of the bench's own, made once per machine user.
 */
process.env.SIGNING_KEK_FILE ||= ensureKekFile(join(tmpdir(), `audience-bench-${process.getuid?.() ?? 0}`, 'signing-kek'));

export async function spawnPinned(core: number | string, file: string, args: string[], env: Record<string, string>, marker: RegExp, nodeArgs: string[] = [], node = process.execPath, stdin = false): Promise<{ child: ChildProcess; match: RegExpMatchArray }> {
  const child = spawn('taskset', ['-c', String(core), node, ...nodeArgs, file, ...args], { env: { ...process.env, ...env }, stdio: [stdin ? 'pipe' : 'ignore', 'pipe', 'inherit'] });
  running.add(child);
  child.once('exit', () => running.delete(child));
  let out = '';
  let matched = false;
  const match = await new Promise<RegExpMatchArray>((resolve, reject) => {
    // once started, only its errors are said (a pino level of 50 or more: a worker killed, say); the rest is not kept
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (matched) {
        if (/^\{"level":[56]0,/.test(line)) process.stderr.write(`bench: ${basename(file)}: ${line}\n`);
        return;
      }
      out += `${line}\n`;
      const m = marker.exec(out);
      if (m) {
        matched = true;
        resolve(m);
      }
    });
    child.once('exit', (code) => reject(new Error(`${file} exited with ${code}: ${out}`)));
  });
  return { child, match };
}


/** The built gateway (dist/gateway/main.js unless `main` says another build's) on a free port, pinned to core 0. */
export async function spawnPinnedGateway(
  redisUrl: string,
  o: { nodeArgs?: readonly string[]; env?: Record<string, string>; main?: string; node?: string } = {},
): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const main = o.main ?? fileURLToPath(new URL('../gateway/main.js', import.meta.url));
  const env = { REDIS_URL: redisUrl, PORT: String(port), OPS_PORT: '0', LOG_LEVEL: 'info', ...BENCH_LIMITS, ...o.env };
  const { child } = await spawnPinned(0, main, [], env, /audience-gateway listening/, [...(o.nodeArgs ?? GATEWAY_NODE_FLAGS)], o.node);
  return { child, url: `http://127.0.0.1:${port}` };
}

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

/**
 * Moves a running process (this one by default), every thread of it, to one CPU core or a list of
 * them ('0-1'). Every thread: `taskset -p` alone moves only the main thread, and a process's
 * threads started before it (Redis's background I/O threads, which fsync the AOF; V8's helper
 * threads) stayed free to run on the core under test (seen with `perf sched` on 2026-11-23).
 */
export async function pinProcess(core: number | string, pid = process.pid): Promise<void> {
  await promisify(execFile)('taskset', ['-apc', String(core), String(pid)]);
}

/** One thread of a process, as /proc shows it (what `top -H` and `taskset -p` read). */
export interface ThreadInfo {
  tid: number;
  /** comm: "node", or the name a thread gave itself ("tick-clock") */
  name: string;
  /** scheduling policy: 0 SCHED_OTHER, 5 SCHED_IDLE */
  policy: number;
  nice: number;
  /** the CPUs it may run on, as the kernel lists them ("0-1") */
  cpus: string;
  /** user + system CPU time so far */
  cpuSeconds: number;
}

/** Every thread of `pid` (a thread that ends while it is read is left out). */
export function threadsOf(pid: number): ThreadInfo[] {
  return readdirSync(`/proc/${pid}/task`).flatMap((t) => {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8');
      // the name is in parentheses and may hold spaces: the fields after it start at field 3
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const field = (n: number) => Number(f[n - 3]);
      const status = readFileSync(`/proc/${pid}/task/${t}/status`, 'utf8');
      return [
        {
          tid: Number(t),
          name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
          policy: field(41),
          nice: field(19),
          cpus: /^Cpus_allowed_list:\s*(\S+)/m.exec(status)![1]!,
          cpuSeconds: (field(14) + field(15)) / 100, // utime + stime, in USER_HZ ticks
        },
      ];
    } catch {
      return []; // it ended meanwhile
    }
  });
}

/** redis-server with AOF on, pinned to `core`; stop() also removes its data directory. */
export async function pinnedRedis(core: number): Promise<RedisServer> {
  const dir = mkdtempSync(join(tmpdir(), 'ac-bench-'));
  const redis = await startRedisServer({ dir });
  await pinProcess(core, redis.pid);
  const stop = redis.stop.bind(redis);
  return Object.assign(redis, {
    stop: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  });
}

/**
 * Starts measuring the share of this machine's CPU time the hypervisor took away (steal, from
 * /proc/stat); the returned function gives the share since. A busy host makes every figure worse.
 */
export function stealMeter(): () => number {
  const read = () => {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
    return { steal: f[7]!, total: f.reduce((a, b) => a + b, 0) };
  };
  const before = read();
  return () => {
    const after = read();
    return after.total > before.total ? (after.steal - before.steal) / (after.total - before.total) : 0;
  };
}

/**
 * A file of /proc/<pid>; a process gone is said as such (a gateway worker the supervisor replaced
 * mid-run makes a figure of its pids meaningless, so the run stops there).
 */
function procFile(pid: number, file: string): string {
  try {
    return readFileSync(`/proc/${pid}/${file}`, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(`process ${pid} is gone: a figure of it cannot be read (a gateway worker the supervisor killed and replaced? its log says)`);
    throw e;
  }
}

/** CPU seconds a process has used so far in user space and in the kernel, from /proc. */
export function cpuSplit(pid: number): { user: number; system: number } {
  const fields = procFile(pid, 'stat').split(') ')[1]!.split(' ');
  return { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 }; // utime, stime in clock ticks (USER_HZ = 100)
}

/** CPU seconds (user + system) a process has used so far, from /proc. */
export function cpuSeconds(pid: number): number {
  const { user, system } = cpuSplit(pid);
  return user + system;
}

/** The percentiles every figure here reports. */
export interface Percentiles {
  p50: number;
  p99: number;
  p999: number;
  max: number;
}

/** Percentiles of samples sorted ascending (NaN when there are none). */
export function percentiles(sorted: ArrayLike<number>): Percentiles {
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
  return { p50: at(0.5), p99: at(0.99), p999: at(0.999), max: sorted[sorted.length - 1] ?? NaN };
}

/** The item in the middle when ordered by `key` (of an even number, the upper of the two middle ones). */
export function medianBy<T>(items: readonly T[], key: (item: T) => number): T {
  if (items.length === 0) throw new Error('medianBy: no items');
  return [...items].sort((a, b) => key(a) - key(b))[Math.floor(items.length / 2)]!;
}

export interface LoadResult {
  name: string;
  requestsPerSec: number;
  latencyMs: Percentiles;
  /** open loop only: latency from each request's scheduled time (see open-loop.ts) */
  fromScheduleMs?: Percentiles;
  total: number;
  non2xx: number;
  /** open loop only: answers by HTTP status, so a run that went wrong says how */
  statuses?: Record<string, number>;
  errors: number;
  /** CPU time the server under test used per request, when its pid was given */
  serverCpuUsPerRequest?: number;
  /** share of one core the server used during the run */
  serverCpuShare?: number;
}

/** A request built up front (the generator then only sends it). */
export type BuiltRequest = { method: 'GET' | 'POST'; path: string; headers: Record<string, string>; body?: string };

export interface LoadSpec {
  name: string;
  url: string;
  connections: number;
  durationSec: number;
  /** pid of the server under test, to measure its CPU time */
  serverPid?: number;
  /** builds each request; called by autocannon per request */
  request?: () => { method: 'GET' | 'POST'; path: string; headers: Record<string, string>; body?: string };
  /** stop after this many requests instead of after durationSec */
  amount?: number;
}

/**
 * One closed-loop autocannon run (no pipelining: uWS stalls on pipelined async replies). For fixed
 * rates use open-loop.ts: autocannon's rate option sends each second's budget as a burst.
 */
export async function load(spec: LoadSpec): Promise<LoadResult> {
  const make = spec.request;
  const cpuBefore = spec.serverPid ? cpuSeconds(spec.serverPid) : 0;
  const result = await autocannon({
    url: spec.url,
    connections: spec.connections,
    duration: spec.durationSec,
    pipelining: 1,
    ...(spec.amount && { amount: spec.amount }),
    ...(make && {
      requests: [
        {
          // a copy: autocannon writes Content-Length into the headers object it is given, and a
          // prebuilt request reused by another generator would then carry it twice (a 400 and a close)
          setupRequest: (req) => {
            const r = make();
            return { ...req, ...r, headers: { ...r.headers } };
          },
        },
      ],
    }),
  });
  return {
    name: spec.name,
    requestsPerSec: result.requests.average,
    latencyMs: { p50: result.latency.p50, p99: result.latency.p99, p999: result.latency.p99_9, max: result.latency.max },
    total: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    ...(spec.serverPid && {
      serverCpuUsPerRequest: ((cpuSeconds(spec.serverPid) - cpuBefore) * 1e6) / result.requests.total,
      serverCpuShare: (cpuSeconds(spec.serverPid) - cpuBefore) / result.duration,
    }),
  };
}

export interface WrkSpec {
  name: string;
  url: string;
  connections: number;
  durationSec: number;
  serverPid?: number;
  /** the requests, sent in rotation; absent: GET / */
  requests?: readonly BuiltRequest[];
  /** the core wrk runs on (default 1) */
  core?: number;
  /** send a fresh Idempotency-Key with every request */
  idempotency?: boolean;
}

const WRK_SCRIPT = fileURLToPath(new URL('../../bench/wrk.lua', import.meta.url));

/**
 * One closed-loop wrk run (one thread, no pipelining), pinned to a core. wrk costs far less per
 * request than autocannon, so from one core it can saturate a server that autocannon cannot.
 */
export async function wrkLoad(spec: WrkSpec): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), 'ac-wrk-'));
  try {
    const env: Record<string, string> = { ...(process.env as Record<string, string>) };
    if (spec.requests) {
      const file = join(dir, 'requests.tsv');
      writeFileSync(file, spec.requests.map((r) => [r.method, r.path, r.body ?? '', ...Object.entries(r.headers).map(([k, v]) => `${k}: ${v}`)].join('\t')).join('\n') + '\n');
      env.REQUESTS = file;
    }
    if (spec.idempotency) env.IDEMPOTENCY = '1';
    const cpuBefore = spec.serverPid ? cpuSeconds(spec.serverPid) : 0;
    const args = ['-c', String(spec.core ?? 1), 'wrk', '-t1', `-c${spec.connections}`, `-d${spec.durationSec}s`, '-s', WRK_SCRIPT, spec.url];
    const { stdout } = await promisify(execFile)('taskset', args, { env, maxBuffer: 1 << 20 });
    const m = /WRK_RESULT (\{.*\})/.exec(stdout);
    if (!m) throw new Error(`wrk printed no result:\n${stdout}`);
    const r = JSON.parse(m[1]!) as { requests: number; durationUs: number; non2xx: number; errors: number; p50: number; p99: number; p999: number; max: number };
    const seconds = r.durationUs / 1e6;
    return {
      name: spec.name,
      requestsPerSec: r.requests / seconds,
      latencyMs: { p50: r.p50 / 1000, p99: r.p99 / 1000, p999: r.p999 / 1000, max: r.max / 1000 },
      total: r.requests,
      non2xx: r.non2xx,
      errors: r.errors,
      ...(spec.serverPid && {
        serverCpuUsPerRequest: ((cpuSeconds(spec.serverPid) - cpuBefore) * 1e6) / r.requests,
        serverCpuShare: (cpuSeconds(spec.serverPid) - cpuBefore) / seconds,
      }),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Resident memory of a process, in MiB (VmRSS). */
export function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(procFile(pid, 'status'));
  return m ? Number(m[1]) / 1024 : NaN;
}
