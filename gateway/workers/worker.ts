// The worker side of GATEWAY_WORKERS: tells the supervisor it listens, sends heartbeats while its
// event loop turns, and pushes its metrics and readiness every STATE_PUSH_MS.
import { availableParallelism } from 'node:os';
import type { Registry } from 'prom-client';
import { HEARTBEAT_MS, STATE_PUSH_MS, type FromWorker, type ToWorker } from './messages.js';

export interface WorkerSide {
  port: number;
  registry: Registry;
  /** why this worker is not ready, or null */
  ready: () => Promise<string | null>;
  /** what its /readyz would add to a 200 (the clock), or null */
  note: () => string | null;
}

/** GATEWAY_WORKERS: a number, or `auto` for one worker per core. */
export function workerCount(setting: string): number {
  return setting === 'auto' ? availableParallelism() : Number(setting);
}

/** True when this process runs under the supervisor (forked with an IPC channel). */
export function isWorker(): boolean {
  return typeof process.send === 'function' && Boolean(process.env.GATEWAY_WORKER_ID);
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
  let pushing = false;
  const push = () => {
    if (pushing) return; // a slow Redis answer must not pile up pushes
    pushing = true;
    Promise.all([w.registry.getMetricsAsJSON(), w.ready().catch((e: unknown) => String(e))])
      .then(([metrics, problem]) => send({ type: 'state', metrics, problem: problem === null ? null : `worker ${id}: ${problem}`, note: w.note() }))
      .catch(() => send({ type: 'state', metrics: [], problem: `worker ${id}: could not read its metrics`, note: null }))
      .finally(() => (pushing = false));
  };
  const onMessage = (m: ToWorker) => {
    if (m?.type === 'collect') push();
  };
  process.on('message', onMessage);
  send({ type: 'listening', port: w.port });
  push();
  const heartbeat = setInterval(() => send({ type: 'heartbeat' }), HEARTBEAT_MS);
  const state = setInterval(push, STATE_PUSH_MS);
  // the supervisor went away (killed): a worker must not outlive it
  process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
  return () => {
    clearInterval(heartbeat);
    clearInterval(state);
    process.off('message', onMessage);
  };
}
