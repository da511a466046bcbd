// GATEWAY_WORKERS=N: N gateway processes on one port, under this supervisor. Each worker is the
// whole gateway (its own Redis connections, caches and invalidation subscriber, so revocations and
// page switches reach every worker as they reach every gateway); uSockets listens with
// SO_REUSEPORT on Linux, so the kernel spreads new connections over the workers. The supervisor
// restarts a worker that exits or stops sending heartbeats, forwards SIGTERM/SIGINT, speaks to
// systemd for all (READY once every worker listens, WATCHDOG while at least one serves and its own
// loop turns, STOPPING), and serves one /metrics summed over the workers (prom-client's
// AggregatorRegistry over IPC), /healthz and /readyz on OPS_PORT.
import { fork, type ChildProcess } from 'node:child_process';
import { AggregatorRegistry, Counter, Registry, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import type { Logger } from '../../runtime/log.js';
import { startOpsServer } from '../../runtime/ops-server.js';
import { SystemdNotifier } from '../../runtime/systemd.js';
import type { GatewayConfig } from '../config.js';
import { HEARTBEAT_MS, type FromWorker, type ToWorker } from './messages.js';

/** A worker silent for this long is taken for wedged: killed and replaced. */
const HEARTBEAT_TIMEOUT_MS = 10 * HEARTBEAT_MS;
const RESTART_BACKOFF_MS = [100, 500, 1000, 2000, 5000];
const ASK_TIMEOUT_MS = 2000;

interface Worker {
  id: number;
  child: ChildProcess;
  listening: boolean;
  lastHeartbeat: number;
}

export async function superviseWorkers(config: GatewayConfig, count: number, script: string, log: Logger): Promise<void> {
  const notifier = new SystemdNotifier(process.env, (e) => log.warn({ err: e.message }, 'systemd-notify failed'));
  const workers = new Map<number, Worker>();
  const registry = new Registry();
  const restarts = new Counter({ name: 'audience_gateway_worker_restarts_total', help: 'Gateway workers the supervisor replaced after they exited or stopped sending heartbeats.', registers: [registry] });
  const failures = new Map<number, number>(); // consecutive early exits, for the backoff
  let stopping = false;
  let readySent = false;
  let nextAsk = 0;
  const pending = new Map<number, (m: FromWorker) => void>();

  const start = (id: number): void => {
    const child = fork(script, process.argv.slice(2), {
      // a worker is one gateway: no workers of its own, no systemd socket, its ops port unused
      env: { ...process.env, GATEWAY_WORKERS: '1', GATEWAY_WORKER_ID: String(id), OPS_PORT: '0', NOTIFY_SOCKET: '', WATCHDOG_USEC: '' },
      execArgv: process.execArgv,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const w: Worker = { id, child, listening: false, lastHeartbeat: Date.now() };
    workers.set(id, w);
    const startedAt = Date.now();
    child.on('message', (m: FromWorker) => {
      w.lastHeartbeat = Date.now();
      if (m.type === 'listening') {
        w.listening = true;
        failures.set(id, 0);
        if (!readySent && [...workers.values()].every((x) => x.listening)) {
          readySent = true;
          void notifier.notify('READY=1', `STATUS=${count} workers listening on ${config.host}:${config.port}`);
          log.info({ workers: count, port: config.port, opsPort: ops.port, pids: [...workers.values()].map((x) => x.child.pid) }, 'audience-gateway workers listening');
        }
      } else if (m.type === 'answer') pending.get(m.ask)?.(m);
    });
    child.on('exit', (code, signal) => {
      if (workers.get(id) === w) workers.delete(id);
      if (stopping) return;
      const n = Date.now() - startedAt < 10_000 ? (failures.get(id) ?? 0) + 1 : 0;
      failures.set(id, n);
      const delay = RESTART_BACKOFF_MS[Math.min(n, RESTART_BACKOFF_MS.length - 1)]!;
      log.error({ worker: id, pid: child.pid, code, signal, restartInMs: delay }, 'gateway worker exited; replacing it');
      restarts.inc();
      setTimeout(() => !stopping && start(id), delay).unref();
    });
  };

  /** Asks every listening worker and gathers the answers (a worker that does not answer in time is left out). */
  const askAll = async (question: ToWorker['type']): Promise<FromWorker[]> => {
    const asks = [...workers.values()].filter((w) => w.listening && w.child.connected).map(
      (w) =>
        new Promise<FromWorker | null>((resolve) => {
          const ask = ++nextAsk;
          const timer = setTimeout(() => {
            pending.delete(ask);
            resolve(null);
          }, ASK_TIMEOUT_MS);
          pending.set(ask, (m) => {
            clearTimeout(timer);
            pending.delete(ask);
            resolve(m);
          });
          w.child.send({ type: question, ask } satisfies ToWorker);
        }),
    );
    return (await Promise.all(asks)).filter((m): m is FromWorker => m !== null);
  };

  const metricsRegistry = {
    contentType: registry.contentType,
    async metrics(): Promise<string> {
      const answers = await askAll('metrics');
      const perWorker = answers.flatMap((a) => (a.type === 'answer' && a.metrics ? [a.metrics as MetricObjectWithValues<MetricValue<string>>[]] : []));
      const own = (await registry.getMetricsAsJSON());
      return AggregatorRegistry.aggregate([...perWorker, own]).metrics();
    },
  } as unknown as Registry;

  const ops = await startOpsServer(config.opsHost, config.opsPort, metricsRegistry, async () => {
    const listening = [...workers.values()].filter((w) => w.listening).length;
    if (listening < count) return `${listening} of ${count} workers listening`;
    const answers = await askAll('ready');
    const problems = answers.flatMap((a) => (a.type === 'answer' && a.problem ? [a.problem] : []));
    if (answers.length < count) problems.push(`${count - answers.length} workers did not answer`);
    return problems.length > 0 ? problems.join('; ') : null;
  });

  for (let i = 1; i <= count; i++) start(i);

  // Replace a worker that stopped sending heartbeats; ping systemd while some worker serves.
  const watchdogMs = notifier.watchdogIntervalMs();
  const check = setInterval(() => {
    const now = Date.now();
    for (const w of workers.values()) {
      if (now - w.lastHeartbeat > HEARTBEAT_TIMEOUT_MS) {
        log.error({ worker: w.id, pid: w.child.pid, silentMs: now - w.lastHeartbeat }, 'gateway worker stopped sending heartbeats; killing it');
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

  await new Promise<void>((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) return;
      stopping = true;
      log.info({ signal }, 'stopping: workers drain in-flight requests');
      clearInterval(check);
      clearInterval(watchdog);
      const told = notifier.notify('STOPPING=1'); // awaited below: exiting first could lose it
      const exits = [...workers.values()].map((w) => new Promise<void>((r) => (w.child.exitCode !== null || w.child.signalCode !== null ? r() : w.child.once('exit', () => r()))));
      for (const w of workers.values()) w.child.kill('SIGTERM');
      void Promise.all([...exits, told])
        .then(() => ops.close())
        .then(resolve, resolve);
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
  });
}
