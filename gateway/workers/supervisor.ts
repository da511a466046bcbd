// GATEWAY_WORKERS=N: N gateway processes on one port, under this supervisor. Each worker is the
// whole gateway (its own Redis connections, caches and invalidation subscriber, so revocations and
// page switches reach every worker as they reach every gateway); uSockets listens with
// SO_REUSEPORT on Linux, so the kernel spreads new connections over the workers. The supervisor
// restarts a worker that exits, kills and replaces one silent for HEARTBEAT_TIMEOUT_MS once it
// listens, or not listening START_TIMEOUT_MS after its start (a wedged worker keeps its listening
// socket, so the kernel would keep handing it connections), forwards
// SIGTERM/SIGINT, speaks to systemd for all (READY once every worker listens, WATCHDOG while at
// least one serves and its own loop turns, STOPPING), and serves on OPS_PORT one /metrics summed
// over the workers (prom-client's AggregatorRegistry), /healthz and /readyz. Workers push their
// counts and readiness every STATE_PUSH_MS, and all their metrics when a scrape or a probe asks,
// so both answer at once from what the supervisor keeps, whatever a worker is doing (a wedged
// worker's gauges are those of the last scrape it answered); the last counts of a worker that died
// are kept, so summed counters never go backwards.
import { fork, type ChildProcess } from 'node:child_process';
import { AggregatorRegistry, Counter, Histogram, Registry, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import type { Logger } from '../../runtime/log.js';
import { startOpsServer } from '../../runtime/ops-server.js';
import { SystemdNotifier } from '../../runtime/systemd.js';
import { DRAIN_MS } from '../app.js';
import type { GatewayConfig } from '../config.js';
import { COLLECT_WAIT_MS, HEARTBEAT_MS, HEARTBEAT_TIMEOUT_MS, START_TIMEOUT_MS, asFromWorker, type ToWorker } from './messages.js';

type Metrics = MetricObjectWithValues<MetricValue<string>>[];

const RESTART_BACKOFF_MS = [100, 500, 1000, 2000, 5000];
/**
 * A worker still running this long after SIGTERM (stopped, wedged) is killed: the drain time of its
 * requests and then of its live sockets (LIVE_DRAIN_MS), which a healthy worker never needs whole
 * (it exits once its in-flight requests are answered and its sockets closed).
 */
export function stopGraceMs(config: Pick<GatewayConfig, 'liveDrainMs'>): number {
  return DRAIN_MS + config.liveDrainMs;
}
/** Counts kept of workers that died, merged into one snapshot once there are more than this many. */
const RETIRED_PARTS_MAX = 8;

interface Worker {
  id: number;
  child: ChildProcess;
  listening: boolean;
  lastHeartbeat: number;
  /** all its metrics, as it last sent them when asked */
  metrics: Metrics;
  /** its counters and histograms, as it last sent them (asked or not) */
  counts: Metrics;
  problem: string | null;
  /** what its /readyz adds to a 200 (a clock far from Redis's), or null */
  note: string | null;
  /** when it last sent all its metrics */
  metricsAt: number;
}

/** A metric that only grows (a counter, a histogram): a worker's counts, kept for a worker that died. */
const isCumulative = (m: Metrics[number]) => ['counter', 'histogram'].includes(String(m.type));

export async function superviseWorkers(config: GatewayConfig, count: number, script: string, log: Logger): Promise<void> {
  const notifier = new SystemdNotifier(process.env, (e) => log.warn({ err: e.message }, 'systemd-notify failed'));
  const workers = new Map<number, Worker>();
  const registry = new Registry();
  const restarts = new Counter({ name: 'audience_gateway_worker_restarts_total', help: 'Gateway workers the supervisor replaced after they exited or stopped sending heartbeats.', registers: [registry] });
  const silences = new Histogram({
    name: 'audience_gateway_worker_silence_seconds',
    help: `Silences between a listening worker's messages (a heartbeat every ${HEARTBEAT_MS} ms while its event loop turns): how long the loop went without turning. One silent ${HEARTBEAT_TIMEOUT_MS / 1000} s is killed; its last silence is not observed.`,
    buckets: [0.5, 1, 1.5, 2],
    registers: [registry],
  });
  const malformed = new Counter({ name: 'audience_gateway_worker_ipc_malformed_total', help: 'IPC messages from workers that were not of a known shape (ignored).', registers: [registry] });
  const failures = new Map<number, number>(); // consecutive early exits, for the backoff
  /** the cumulative counts of workers that died */
  let retired: Metrics[] = [];
  let stopping = false;
  let readySent = false;

  const retire = (w: Worker): void => {
    const kept = w.counts;
    if (kept.length === 0) return;
    retired.push(kept);
    if (retired.length <= RETIRED_PARTS_MAX) return;
    const parts = [...retired];
    AggregatorRegistry.aggregate(parts)
      .getMetricsAsJSON()
      .then((merged) => (retired = [merged as Metrics, ...retired.slice(parts.length)]))
      .catch((e: unknown) => log.warn({ err: e }, 'could not merge the counts of retired workers'));
  };

  const start = (id: number): void => {
    const child = fork(script, process.argv.slice(2), {
      // a worker is one gateway: no workers of its own, no systemd socket, its ops port unused
      env: { ...process.env, GATEWAY_WORKERS: '1', GATEWAY_WORKER_ID: String(id), OPS_PORT: '0', NOTIFY_SOCKET: '', WATCHDOG_USEC: '' },
      execArgv: process.execArgv,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const w: Worker = { id, child, listening: false, lastHeartbeat: Date.now(), metrics: [], counts: [], problem: 'starting', note: null, metricsAt: 0 };
    workers.set(id, w);
    const startedAt = Date.now();
    child.on('message', (raw: unknown) => {
      const m = asFromWorker(raw);
      if (!m) {
        malformed.inc();
        return;
      }
      const heard = Date.now();
      if (w.listening) silences.observe((heard - w.lastHeartbeat) / 1000);
      w.lastHeartbeat = heard;
      if (m.type === 'state') {
        const metrics = m.metrics as Metrics;
        if (m.scope === 'all') {
          w.metrics = metrics;
          w.metricsAt = Date.now();
        }
        w.counts = m.scope === 'all' ? metrics.filter(isCumulative) : metrics;
        w.problem = m.problem;
        w.note = m.note;
        collected?.();
      } else if (m.type === 'listening') {
        w.listening = true;
        failures.set(id, 0);
        if (!readySent && [...workers.values()].every((x) => x.listening)) {
          readySent = true;
          void notifier.notify('READY=1', `STATUS=${count} workers listening on ${config.host}:${config.port}`);
          log.info({ workers: count, port: config.port, opsPort: ops.port, pids: [...workers.values()].map((x) => x.child.pid) }, 'audience-gateway workers listening');
        }
      }
    });
    child.on('exit', (code, signal) => {
      if (workers.get(id) === w) workers.delete(id);
      retire(w);
      if (stopping) return;
      const n = Date.now() - startedAt < 10_000 ? (failures.get(id) ?? 0) + 1 : 0;
      failures.set(id, n);
      const delay = RESTART_BACKOFF_MS[Math.min(n, RESTART_BACKOFF_MS.length - 1)]!;
      log.error({ worker: id, pid: child.pid, code, signal, restartInMs: delay }, 'gateway worker exited; replacing it');
      restarts.inc();
      setTimeout(() => !stopping && start(id), delay).unref();
    });
  };

  /** Called on each pushed state while a collection waits. */
  let collected: (() => void) | null = null;
  /**
   * Asks every live worker for its state now and waits for them, at most COLLECT_WAIT_MS: a healthy
   * worker's answer is fresh; a wedged one's is what it pushed last, and the answer is not held up.
   */
  const collect = (): Promise<void> => {
    const asked = Date.now();
    const live = [...workers.values()].filter((w) => w.listening && w.child.connected && asked - w.lastHeartbeat <= HEARTBEAT_MS * 4);
    // a worker gone meanwhile is simply not waited for (its exit is handled where it exits)
    for (const w of live) w.child.send({ type: 'collect' } satisfies ToWorker, () => {});
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        collected = null;
        resolve();
      };
      const timer = setTimeout(done, COLLECT_WAIT_MS);
      collected = () => live.every((w) => w.metricsAt >= asked) && done();
      collected();
    });
  };

  const metricsRegistry = {
    contentType: registry.contentType,
    async metrics(): Promise<string> {
      await collect();
      const own = (await registry.getMetricsAsJSON()) as Metrics;
      // each worker's newest counts, beside the gauges of the last scrape it answered
      const latest = (w: Worker) => [...w.metrics.filter((m) => !isCumulative(m)), ...w.counts];
      return AggregatorRegistry.aggregate([...[...workers.values()].map(latest), ...retired, own]).metrics();
    },
  } as unknown as Registry;

  const ops = await startOpsServer(config.opsHost, config.opsPort, metricsRegistry, async () => {
    await collect();
    const now = Date.now();
    const all = [...workers.values()];
    const problems: string[] = [];
    const listening = all.filter((w) => w.listening).length;
    if (listening < count) problems.push(`${listening} of ${count} workers listening`);
    for (const w of all) {
      if (!w.listening) problems.push(`worker ${w.id} starting`);
      else if (now - w.lastHeartbeat > HEARTBEAT_MS * 4) problems.push(`worker ${w.id} silent for ${now - w.lastHeartbeat} ms`);
      else if (w.listening && w.problem !== null) problems.push(w.problem);
    }
    return problems.length > 0 ? problems.join('; ') : null;
  }, () => [...workers.values()].find((w) => w.note !== null)?.note ?? null); // one host, one clock: the first worker's word

  for (let i = 1; i <= count; i++) start(i);

  // Kill a worker that stopped sending heartbeats (the exit handler replaces it); ping systemd while some worker serves.
  const watchdogMs = notifier.watchdogIntervalMs();
  const check = setInterval(() => {
    const now = Date.now();
    for (const w of workers.values()) {
      const timeout = w.listening ? HEARTBEAT_TIMEOUT_MS : START_TIMEOUT_MS; // a starting worker is silent until it listens
      if (now - w.lastHeartbeat > timeout && w.child.exitCode === null && w.child.signalCode === null) {
        log.error({ worker: w.id, pid: w.child.pid, silentMs: now - w.lastHeartbeat }, w.listening ? 'gateway worker stopped sending heartbeats; killing it' : 'gateway worker did not start listening in time; killing it');
        w.lastHeartbeat = now;
        w.child.kill('SIGKILL');
      }
    }
  }, HEARTBEAT_MS);
  const watchdog = watchdogMs
    ? setInterval(() => {
        if ([...workers.values()].some((w) => w.listening && Date.now() - w.lastHeartbeat < HEARTBEAT_TIMEOUT_MS)) void notifier.notify('WATCHDOG=1');
      }, watchdogMs)
    : undefined;
  // once all listen, the STATUS line also says when the host's clock is far from Redis's (a worker's word)
  let statusNote: string | null = null;
  const status = setInterval(() => {
    const note = [...workers.values()].find((w) => w.note !== null)?.note ?? null;
    if (!readySent || note === statusNote) return;
    void notifier.notify(`STATUS=${count} workers listening on ${config.host}:${config.port}${note === null ? '' : `; ${note}`}`);
    statusNote = note;
  }, 5000);

  await new Promise<void>((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) return;
      stopping = true;
      log.info({ signal }, 'stopping: workers drain in-flight requests');
      clearInterval(check);
      clearInterval(watchdog);
      clearInterval(status);
      const told = notifier.notify('STOPPING=1'); // awaited below: exiting first could lose it
      const exits = [...workers.values()].map((w) => new Promise<void>((r) => (w.child.exitCode !== null || w.child.signalCode !== null ? r() : w.child.once('exit', () => r()))));
      for (const w of workers.values()) w.child.kill('SIGTERM');
      // a stopped or wedged worker never drains: it is killed once its drain time is over
      const grace = setTimeout(() => {
        for (const w of workers.values()) {
          log.error({ worker: w.id, pid: w.child.pid }, 'gateway worker did not stop within its drain time; killing it');
          w.child.kill('SIGKILL');
        }
      }, stopGraceMs(config));
      void Promise.all([...exits, told])
        .then(() => clearTimeout(grace))
        .then(() => ops.close())
        .then(resolve, resolve);
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
  });
}
