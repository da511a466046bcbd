// Bench plumbing: processes pinned to cores, an embedded Redis, seeding, and autocannon runs.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { startRedisServer, type RedisServer } from '../gateway/dev/redis-server.js';

/** Spawns `node [nodeArgs] file args` on the given CPU core (taskset), resolving once it prints `marker`. */
export async function spawnPinned(core: number, file: string, args: string[], env: Record<string, string>, marker: RegExp, nodeArgs: string[] = []): Promise<{ child: ChildProcess; match: RegExpMatchArray }> {
  const child = spawn('taskset', ['-c', String(core), process.execPath, ...nodeArgs, file, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  const match = await new Promise<RegExpMatchArray>((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += String(d);
      const m = marker.exec(out);
      if (m) resolve(m);
    });
    child.once('exit', (code) => reject(new Error(`${file} exited with ${code}: ${out}`)));
  });
  return { child, match };
}

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

/** redis-server with AOF on, pinned to `core`. */
export async function pinnedRedis(core: number): Promise<RedisServer> {
  const redis = await startRedisServer({ dir: mkdtempSync(join(tmpdir(), 'ac-bench-')) });
  spawn('taskset', ['-pc', String(core), String(redis.pid)], { stdio: 'ignore' });
  return redis;
}

/** CPU seconds (user + system) a process has used so far, from /proc. */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
}

export interface LoadResult {
  name: string;
  requestsPerSec: number;
  latencyMs: { p50: number; p99: number; max: number };
  total: number;
  non2xx: number;
  errors: number;
  /** CPU time the server under test used per request, when its pid was given */
  serverCpuUsPerRequest?: number;
  /** share of one core the server used during the run */
  serverCpuShare?: number;
}

export interface LoadSpec {
  name: string;
  url: string;
  connections: number;
  durationSec: number;
  /** pid of the server under test, to measure its CPU time */
  serverPid?: number;
  /** builds each request; called by autocannon per request */
  request?: () => { method: 'GET' | 'POST'; path: string; headers: Record<string, string>; body?: string };
}

/** One closed-loop autocannon run (no pipelining: uWS stalls on pipelined async replies). */
export async function load(spec: LoadSpec): Promise<LoadResult> {
  const make = spec.request;
  const cpuBefore = spec.serverPid ? cpuSeconds(spec.serverPid) : 0;
  const result = await autocannon({
    url: spec.url,
    connections: spec.connections,
    duration: spec.durationSec,
    pipelining: 1,
    ...(make && {
      requests: [
        {
          setupRequest: (req) => ({ ...req, ...make() }),
        },
      ],
    }),
  });
  return {
    name: spec.name,
    requestsPerSec: result.requests.average,
    latencyMs: { p50: result.latency.p50, p99: result.latency.p99, max: result.latency.max },
    total: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    ...(spec.serverPid && {
      serverCpuUsPerRequest: ((cpuSeconds(spec.serverPid) - cpuBefore) * 1e6) / result.requests.total,
      serverCpuShare: (cpuSeconds(spec.serverPid) - cpuBefore) / result.duration,
    }),
  };
}
