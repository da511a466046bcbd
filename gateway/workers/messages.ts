// The IPC messages between the worker supervisor and its gateway workers. A worker pushes its state
// (its counts and readiness) on its own, so the supervisor answers /metrics and /readyz from what it
// keeps, at once, whatever state a worker is in; all its metrics, gauges too, when asked.

/** How often a worker says it is alive. */
export const HEARTBEAT_MS = 250;
/** A worker silent this long is taken for wedged: it is killed (so the kernel stops giving it connections) and replaced. */
export const HEARTBEAT_TIMEOUT_MS = 2000;
/**
 * A worker sends nothing until it listens (loading, connecting to Redis, reading the layouts): one
 * that has not said so this long after it was started is taken for wedged. Far above a start's
 * usual second, so a host short of CPU slows its workers' start instead of killing them in a loop.
 */
export const START_TIMEOUT_MS = 60_000;
/** How often a worker pushes its counts (counters and histograms) and readiness. */
export const STATE_PUSH_MS = 1000;

/** How long /metrics and /readyz wait for the workers' fresh state before answering with what they pushed last. */
export const COLLECT_WAIT_MS = 50;

/** Supervisor -> worker: push your state now, all your metrics (a scrape or a readiness probe came). */
export type ToWorker = { type: 'collect' };

/** Worker -> supervisor. */
export type FromWorker =
  | { type: 'listening'; port: number }
  | { type: 'heartbeat' }
  /**
   * `metrics`: the worker registry's metrics as getMetricsAsJSON() gives them, all of them
   * (`scope` all, the answer to a collect) or its counters and histograms (`counts`, pushed on its
   * own); `problem`: why it is not ready, or null; `note`: what a 200 adds
   */
  | { type: 'state'; scope: StateScope; metrics: unknown[]; problem: string | null; note: string | null };

export type StateScope = 'all' | 'counts';

/** The message if it is one a worker sends, else null (a bug or a stray process.send: counted and ignored). */
export function asFromWorker(m: unknown): FromWorker | null {
  if (typeof m !== 'object' || m === null) return null;
  const x = m as Record<string, unknown>;
  if (x.type === 'heartbeat') return { type: 'heartbeat' };
  if (x.type === 'listening' && typeof x.port === 'number') return { type: 'listening', port: x.port };
  const text = (v: unknown) => v === null || typeof v === 'string';
  const scope = x.scope ?? 'all';
  if (x.type === 'state' && Array.isArray(x.metrics) && (scope === 'all' || scope === 'counts') && text(x.problem) && (x.note === undefined || text(x.note))) return { type: 'state', scope, metrics: x.metrics, problem: x.problem, note: x.note ?? null };
  return null;
}
