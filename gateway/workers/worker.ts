// The worker side of GATEWAY_WORKERS: tells the supervisor it listens, sends heartbeats while its
// event loop turns, pushes its counts and readiness every STATE_PUSH_MS, and all its metrics when
// asked. Its gauges are collected only when asked (a scrape): process_open_fds lists
// /proc/self/fd, one entry per live socket, and once a second that was most of an idle worker's CPU.
import { availableParallelism } from 'node:os';
import type { Registry } from 'prom-client';
import { HEARTBEAT_MS, STATE_PUSH_MS, type FromWorker, type StateScope, type ToWorker } from './messages.js';

export interface WorkerSide {
  port: number;
  registry: Registry;
  /** why this worker is not ready, or null */
  ready: () => Promise<string | null>;
  /** what its /readyz would add to a 200 (the clock), or null */
  note: () => string | null;
}

const CUMULATIVE = new Set(['counter', 'histogram']);

/** The registry's metrics in the scope, as getMetricsAsJSON() gives them; for `counts`, no gauge is collected. */
function metricsIn(registry: Registry, scope: StateScope): Promise<unknown[]> {
  if (scope === 'all') return registry.getMetricsAsJSON();
  return Promise.all(registry.getMetricsAsArray().filter((m) => CUMULATIVE.has(String(m.type))).map((m) => registry.getSingleMetric(m.name)!.get()));
}

/** GATEWAY_WORKERS: a number, or `auto` for one worker per core. */
export function workerCount(setting: string): number {
  return setting === 'auto' ? availableParallelism() : Number(setting);
}

/** True when this process runs under the supervisor (forked with an IPC channel). */
export function isWorker(): boolean {
  return typeof process.send === 'function' && Boolean(process.env.GATEWAY_WORKER_ID);
}

/**
 * A worker must not outlive its supervisor: once the IPC channel closes (the supervisor went away,
 * killed or crashed), the worker sends itself SIGTERM and drains as on any stop. Called before the
 * worker starts, so a supervisor that goes away during the start (Redis slow to answer, a loaded
 * machine) still ends it, once it has started; a channel already closed ends it the same way.
 */
export function endWithSupervisor(): void {
  if (!process.connected) process.kill(process.pid, 'SIGTERM');
  else process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
}

export function serveSupervisor(w: WorkerSide): () => void {
  // A send can still meet the closed channel of a supervisor that is gone: timers that fell due
  // while the process was stopped run before the channel's end is read. With a callback the error
  // is handed to it, not thrown as an 'error' event that ends the process; 'disconnect' follows
  // and ends the worker cleanly.
  const send = (m: FromWorker) => {
    if (process.connected) process.send!(m, undefined, undefined, () => {});
  };
  const id = process.env.GATEWAY_WORKER_ID;
  // One push at a time, so states reach the supervisor in the order they were read (counts never
  // go back there): a slow Redis answer must not pile up pushes, and a collect asked for meanwhile
  // is answered right after the push under way.
  let pushing = false;
  let collectAsked = false;
  const push = (scope: StateScope) => {
    if (pushing) {
      if (scope === 'all') collectAsked = true;
      return;
    }
    pushing = true;
    Promise.all([metricsIn(w.registry, scope), w.ready().catch((e: unknown) => String(e))])
      .then(([metrics, problem]) => send({ type: 'state', scope, metrics, problem: problem === null ? null : `worker ${id}: ${problem}`, note: w.note() }))
      .catch(() => send({ type: 'state', scope, metrics: [], problem: `worker ${id}: could not read its metrics`, note: null }))
      .finally(() => {
        pushing = false;
        if (collectAsked) {
          collectAsked = false;
          push('all');
        }
      });
  };
  const onMessage = (m: ToWorker) => {
    if (m?.type === 'collect') push('all');
  };
  process.on('message', onMessage);
  send({ type: 'listening', port: w.port });
  push('counts');
  const heartbeat = setInterval(() => send({ type: 'heartbeat' }), HEARTBEAT_MS);
  const state = setInterval(() => push('counts'), STATE_PUSH_MS);
  return () => {
    clearInterval(heartbeat);
    clearInterval(state);
    process.off('message', onMessage);
  };
}
