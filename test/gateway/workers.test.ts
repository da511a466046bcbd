// GATEWAY_WORKERS=2: two gateway processes serve one port under a supervisor that replaces a
// worker killed with kill -9, loses nothing it accepted, and sums both workers' requests in one
// /metrics. The supervisor alone speaks to systemd (READY once, WATCHDOG, STOPPING). SIGTERM stops all.
import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../dev/redis-server.js';
import { stopGraceMs } from '../../gateway/workers/supervisor.js';
import { loadConfig } from '../../gateway/config.js';
import { afterAll, describe, expect, it } from 'vitest';
import { stopProcess } from '../helpers/bridge.js';
import { gatewayChild, postOnNewConnection, spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { eventually, mintToken, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { sample, scrape } from '../helpers/metrics.js';
import { startFakeNotifySocket } from '../helpers/notify-socket.js';
import { recordFigure } from '../helpers/figures.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';

const redis = useRedis();
const SUPERVISOR = fileURLToPath(new URL('../fixtures/run-supervisor.mjs', import.meta.url));
const WORKER_FIXTURE = fileURLToPath(new URL('../fixtures/chatty-worker.mjs', import.meta.url));
const GAUGE_WORKER = fileURLToPath(new URL('../fixtures/gauge-worker.mjs', import.meta.url));
let seeded: TestGateway;
let gw: GatewayProcess;
let notifySocket: ChildProcess | undefined;
afterAll(async () => {
  if (gw) await stopProcess(gw.child, 'SIGKILL');
  notifySocket?.kill('SIGKILL');
  await seeded?.close();
});

/** pids listening on the port (ss -ltnp). */
function listeners(port: number): number[] {
  const out = execFileSync('ss', ['-Hltnp', `sport = :${port}`], { encoding: 'utf8' });
  return [...out.matchAll(/pid=(\d+)/g)].map((m) => Number(m[1])).sort();
}

/** Whether a process runs: a worker that ended but is not reaped yet (its parent, the supervisor, is gone) is a zombie, ended. */
function alive(pid: number): boolean {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}


describe('GATEWAY_WORKERS=2', () => {
  it('serves one port from two processes, replaces a killed worker, loses nothing accepted, and counts both in one /metrics', async () => {
    seeded = await startTestGateway({ redisUrl: redis.get().server.url });
    const token = await mintToken(seeded, seeded.layoutId, seeded.apiKey);
    const systemd = await startFakeNotifySocket();
    notifySocket = systemd.child;
    gw = await spawnGateway({ REDIS_URL: redis.get().server.url, REDIS_PREFIX: seeded.config.redisPrefix, GATEWAY_WORKERS: '2', NOTIFY_SOCKET: systemd.path, WATCHDOG_USEC: '1000000' });
    await eventually(() => systemd.text().includes('READY=1') && systemd.pings.length >= 1);
    expect(systemd.text().match(/READY=1/g)).toHaveLength(1); // the supervisor speaks for all; workers say nothing
    const workers = listeners(gw.port);
    expect(workers).toHaveLength(2);
    expect(workers).not.toContain(gw.child.pid);

    const accepted: string[] = [];
    let sent = 0;
    const send = async (value: string) => {
      sent++;
      if ((await postOnNewConnection(gw.port, token, { layoutId: seeded.layoutId, lid: 5, type: 'String', value })) === 200) accepted.push(value);
    };
    for (let i = 0; i < 200; i++) await send(`before-${i}`);
    expect(accepted).toHaveLength(200);
    const text = await scrape(gw.opsPort);
    expect(sample(text, 'audience_gateway_http_requests_total{route="/action",status="200"}')).toBe(200); // both workers' requests, summed

    // kill -9 one worker while requests keep coming
    const load = (async () => {
      for (let i = 0; i < 300; i++) await send(`during-${i}`);
    })();
    await new Promise((r) => setTimeout(r, 50));
    const beforeKill = sample(await scrape(gw.opsPort), 'audience_gateway_http_requests_total{route="/action",status="200"}');
    process.kill(workers[0]!, 'SIGKILL');
    await load;
    await eventually(() => listeners(gw.port).length === 2 && !listeners(gw.port).includes(workers[0]!), 10_000);
    for (let i = 0; i < 50; i++) await send(`after-${i}`);

    // nothing accepted is lost: every 200 is one stream entry
    const entries = await redis.get().client.xrange(seeded.gw.stores.keys.actions(seeded.layoutId), '-', '+');
    const inStream = new Set(entries.map(([, f]) => (JSON.parse(f[1]!) as { value: string }).value));
    expect(accepted.filter((v) => !inStream.has(v))).toEqual([]);
    expect(accepted.length).toBeGreaterThan(sent - 50); // at most the requests that were on the killed worker failed
    const after = await scrape(gw.opsPort);
    expect(sample(after, 'audience_gateway_worker_restarts_total')).toBe(1);
    // the killed worker's last counts stay in the sum: it never goes backwards, and counts nothing twice
    // (what it answered after its last state push, at most a second before it died, is not in it)
    const served = sample(after, 'audience_gateway_http_requests_total{route="/action",status="200"}');
    expect(served).toBeGreaterThanOrEqual(beforeKill + 50);
    expect(served).toBeLessThanOrEqual(accepted.length);
    expect((await fetch(`http://127.0.0.1:${gw.opsPort}/readyz`)).status).toBe(200);

    const pids = listeners(gw.port);
    expect(await stopProcess(gw.child, 'SIGTERM')).toBe(0);
    await eventually(() => systemd.text().includes('STOPPING=1')); // the fake socket's output may arrive a little later
    for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow(); // the workers are gone too
  });

  it('a worker whose start takes longer than the heartbeat timeout (a loaded host) is waited for, not killed over and over', async () => {
    // every Node process of this gateway spends 3 s before its first line: longer than
    // HEARTBEAT_TIMEOUT_MS, as a start on a host short of CPU can be
    const dir = mkdtempSync(join(tmpdir(), 'ac-slow-'));
    const slow = join(dir, 'slow-start.cjs');
    writeFileSync(slow, 'const until = Date.now() + 3000; while (Date.now() < until) {}\n');
    const started = await spawnGateway({ REDIS_URL: redis.get().server.url, REDIS_PREFIX: randomPrefix(), GATEWAY_WORKERS: '2', NODE_OPTIONS: `--require ${slow}` }, 30_000);
    try {
      expect(listeners(started.port)).toHaveLength(2);
      expect(sample(await scrape(started.opsPort), 'audience_gateway_worker_restarts_total')).toBe(0);
      expect(started.output()).not.toMatch(/stopped sending heartbeats/);
    } finally {
      await stopProcess(started.child, 'SIGTERM');
    }
  }, 40_000);

  it('a worker silent for 1.3 s is counted in audience_gateway_worker_silence_seconds and kept; a wedged one (SIGSTOP): /readyz and /metrics answer within 100 ms, counters do not go back, and it is killed and replaced within about 2 s', async () => {
    const wedged = await spawnGateway({ REDIS_URL: redis.get().server.url, REDIS_PREFIX: seeded.config.redisPrefix, GATEWAY_WORKERS: '2' });
    try {
      const token = await mintToken(seeded, seeded.layoutId, seeded.apiKey);
      for (let i = 0; i < 100; i++) expect(await postOnNewConnection(wedged.port, token, { layoutId: seeded.layoutId, lid: 1, type: 'Button' })).toBe(200);
      const served = () => scrape(wedged.opsPort).then((t) => sample(t, 'audience_gateway_http_requests_total{route="/action",status="200"}'));
      expect(await served()).toBe(100);
      const [victim] = listeners(wedged.port);
      // first a silence shorter than the timeout (a storm's long turn, or a host short of CPU): counted, and the worker kept
      const silentOverASecond = (t: string) => sample(t, 'audience_gateway_worker_silence_seconds_count') - sample(t, 'audience_gateway_worker_silence_seconds_bucket{le="1"}');
      const before = silentOverASecond(await scrape(wedged.opsPort)); // a loaded host may have made one already
      process.kill(victim!, 'SIGSTOP');
      await new Promise((r) => setTimeout(r, 1300));
      process.kill(victim!, 'SIGCONT');
      await eventually(async () => silentOverASecond(await scrape(wedged.opsPort)) > before);
      const paused = await scrape(wedged.opsPort);
      expect(sample(paused, 'audience_gateway_worker_silence_seconds_bucket{le="2"}')).toBe(sample(paused, 'audience_gateway_worker_silence_seconds_count'));
      expect(sample(paused, 'audience_gateway_worker_restarts_total')).toBe(0);
      expect(listeners(wedged.port)).toContain(victim);
      // then wedged for good
      process.kill(victim!, 'SIGSTOP');
      const stopped = Date.now();
      await new Promise((r) => setTimeout(r, 1200)); // it has missed its heartbeats for over a second now
      const timed = async (path: string) => {
        const started = performance.now();
        const r = await fetch(`http://127.0.0.1:${wedged.opsPort}${path}`);
        return { status: r.status, text: await r.text(), ms: performance.now() - started };
      };
      const ready = await timed('/readyz');
      const metrics = await timed('/metrics');
      recordFigure('gateway_readyz_with_a_wedged_worker_ms', ready.ms, 'ms', '100');
      recordFigure('gateway_metrics_with_a_wedged_worker_ms', metrics.ms, 'ms', '100');
      expect(ready.ms).toBeLessThan(100);
      expect(metrics.ms).toBeLessThan(100);
      expect(ready.status).toBe(503);
      expect(ready.text).toMatch(/worker \d silent for \d+ ms/);
      expect(sample(metrics.text, 'audience_gateway_http_requests_total{route="/action",status="200"}')).toBe(100); // the wedged worker's last counts are kept
      await eventually(() => !listeners(wedged.port).includes(victim!));
      const gone = Date.now() - stopped;
      recordFigure('gateway_wedged_worker_killed_after_ms', gone, 'ms', 'heartbeats every 250 ms; killed after 2 s of silence');
      expect(gone).toBeLessThan(3000);
      // once its replacement listens (a connection the kernel hands a listener still starting up can
      // be reset), no connection goes to the dead one: every one is answered at once
      await eventually(() => listeners(wedged.port).length === 2);
      const started = Date.now();
      for (let i = 0; i < 20; i++) expect(await postOnNewConnection(wedged.port, token, { layoutId: seeded.layoutId, lid: 1, type: 'Button' })).toBe(200);
      expect(Date.now() - started).toBeLessThan(2000);
      // the dead worker's counts stay in the sum: counters never go backwards
      expect(await served()).toBeGreaterThanOrEqual(120);
      await eventually(async () => (await fetch(`http://127.0.0.1:${wedged.opsPort}/readyz`)).status === 200);
      expect(await served()).toBeGreaterThanOrEqual(120);
    } finally {
      await stopProcess(wedged.child, 'SIGKILL');
    }
  }, 30_000);

  it('SIGTERM ends within the drain time even with a worker stopped (SIGSTOP)', async () => {
    const gw2 = await spawnGateway({ REDIS_URL: redis.get().server.url, REDIS_PREFIX: seeded.config.redisPrefix, GATEWAY_WORKERS: '2' });
    const pids = listeners(gw2.port);
    try {
      process.kill(pids[0]!, 'SIGSTOP');
      const started = Date.now();
      const code = await stopProcess(gw2.child, 'SIGTERM');
      const took = Date.now() - started;
      const grace = stopGraceMs(loadConfig({}, { liveDrainMs: 1000 })); // spawnGateway's LIVE_DRAIN_MS
      recordFigure('gateway_sigterm_with_a_stopped_worker_ms', took, 'ms', `${grace} (the drain time of requests and live sockets)`);
      expect(code).toBe(0);
      expect(took).toBeLessThan(grace + 500);
      for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow();
    } finally {
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* already gone */
        }
      }
      await stopProcess(gw2.child, 'SIGKILL');
    }
  }, 30_000);

  it('a worker whose supervisor was killed while it was stopped (SIGSTOP) ends cleanly when it runs again: a heartbeat to the gone supervisor is no unhandled EPIPE', async () => {
    const gw3 = await spawnGateway({ REDIS_URL: redis.get().server.url, REDIS_PREFIX: randomPrefix(), GATEWAY_WORKERS: '2' });
    const pids = listeners(gw3.port);
    try {
      for (const pid of pids) process.kill(pid, 'SIGSTOP');
      await stopProcess(gw3.child, 'SIGKILL'); // the supervisor
      await new Promise((r) => setTimeout(r, 600)); // heartbeats fall due meanwhile: they run before the pipe's end is read
      for (const pid of pids) process.kill(pid, 'SIGCONT');
      await eventually(() => pids.every((pid) => !alive(pid)), 15_000);
      expect(gw3.output()).not.toMatch(/EPIPE|Unhandled 'error'/);
    } finally {
      for (const pid of pids.filter(alive)) process.kill(pid, 'SIGKILL');
    }
  }, 30_000);
  it('a worker whose supervisor is killed while the worker is still starting ends once it has started: it never serves on its own', async () => {
    // Redis stopped: the workers wait in their start for its answers (their command timeout is long)
    const port = await freePort();
    const server = redis.get().server;
    process.kill(server.pid!, 'SIGSTOP');
    const child = gatewayChild({ REDIS_URL: server.url, REDIS_PREFIX: randomPrefix(), REDIS_COMMAND_TIMEOUT_MS: '10000', GATEWAY_WORKERS: '2' }, port, 'ignore');
    const workers = () => readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    let pids: number[] = [];
    try {
      await eventually(() => (pids = workers()).length === 2);
      await new Promise((r) => setTimeout(r, 1000)); // the workers run their start up to its first Redis call
      await stopProcess(child, 'SIGKILL'); // the supervisor
      process.kill(server.pid!, 'SIGCONT'); // their start goes on, and ends: the supervisor is gone by then
      await eventually(() => pids.every((pid) => !alive(pid)), 20_000);
      expect(listeners(port)).toEqual([]);
    } finally {
      process.kill(server.pid!, 'SIGCONT');
      child.kill('SIGKILL');
      for (const pid of pids.filter(alive)) process.kill(pid, 'SIGKILL');
    }
  }, 40_000);
});

describe('the supervisor and what its workers send', () => {
  it('ignores and counts IPC messages of no known shape (null, {}, unknown types), and keeps serving', async () => {
    const opsPort = await freePort();
    const child = spawn(process.execPath, [SUPERVISOR, WORKER_FIXTURE, '1'], { env: { PATH: process.env.PATH ?? '', OPS_PORT: String(opsPort), REDIS_URL: redis.get().server.url } });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    try {
      await eventually(() => out.includes('audience-gateway workers listening'));
      await eventually(async () => sample(await scrape(opsPort), 'audience_gateway_worker_ipc_malformed_total') === 4);
      expect((await fetch(`http://127.0.0.1:${opsPort}/readyz`)).status).toBe(200);
      expect(child.exitCode).toBeNull();
      expect(await stopProcess(child, 'SIGTERM')).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  });
});

describe('the worker side', () => {
  it('pushes its counts every second without collecting its gauges, and collects them only when the supervisor asks', async () => {
    // a gauge can be costly to collect: process_open_fds lists /proc/self/fd, one entry per live socket
    type State = { type: string; metrics: { name: string; values: { value: number }[] }[] };
    const child = fork(GAUGE_WORKER, [], { env: { PATH: process.env.PATH ?? '', GATEWAY_WORKER_ID: '1' }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const states: State[] = [];
    child.on('message', (m: State) => m.type === 'state' && states.push(m));
    const value = (s: State, name: string) => s.metrics.find((m) => m.name === name)?.values[0]?.value;
    try {
      await eventually(() => states.length >= 3, 10_000); // the first at once, then one a second
      for (const s of states) {
        expect(value(s, 'fixture_requests_total')).toBe(3);
        expect(value(s, 'fixture_collects')).toBeUndefined();
      }
      const pushed = states.length;
      child.send({ type: 'collect' });
      await eventually(() => states.slice(pushed).some((s) => value(s, 'fixture_collects') !== undefined));
      const asked = states.slice(pushed).find((s) => value(s, 'fixture_collects') !== undefined)!;
      expect(value(asked, 'fixture_collects')).toBe(1); // collected once, for this answer
      expect(value(asked, 'fixture_requests_total')).toBe(3);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
