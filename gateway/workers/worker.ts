// The worker side of GATEWAY_WORKERS: tells the supervisor it listens, sends heartbeats while its
// event loop turns, and answers the supervisor's questions (its metrics, its readiness).
import { availableParallelism } from 'node:os';
import type { Registry } from 'prom-client';
import { HEARTBEAT_MS, type FromWorker, type ToWorker } from './messages.js';

export interface WorkerSide {
  port: number;
  registry: Registry;
  /** why this worker is not ready, or null */
  ready: () => Promise<string | null>;
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
  const send = (m: FromWorker) => {
    if (process.connected) process.send!(m);
  };
  const onMessage = (m: ToWorker) => {
    if (m.type === 'metrics') {
      w.registry.getMetricsAsJSON().then(
        (metrics) => send({ type: 'answer', ask: m.ask, metrics }),
        () => send({ type: 'answer', ask: m.ask, metrics: [] }),
      );
    } else if (m.type === 'ready') {
      w.ready().then(
        (problem) => send({ type: 'answer', ask: m.ask, problem: problem === null ? null : `worker ${process.env.GATEWAY_WORKER_ID}: ${problem}` }),
        (e: unknown) => send({ type: 'answer', ask: m.ask, problem: String(e) }),
      );
    }
  };
  process.on('message', onMessage);
  send({ type: 'listening', port: w.port });
  const heartbeat = setInterval(() => send({ type: 'heartbeat' }), HEARTBEAT_MS);
  // the supervisor went away (killed): a worker must not outlive it
  process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
  return () => {
    clearInterval(heartbeat);
    process.off('message', onMessage);
  };
}
