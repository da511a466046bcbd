// The IPC messages between the worker supervisor and its gateway workers.

/** How often a worker says it is alive. */
export const HEARTBEAT_MS = 1000;

/** Supervisor -> worker: a question with its number, answered by an `answer` carrying the same number. */
export type ToWorker = { type: 'metrics'; ask: number } | { type: 'ready'; ask: number };

/** Worker -> supervisor. */
export type FromWorker =
  | { type: 'listening'; port: number }
  | { type: 'heartbeat' }
  /** `metrics`: the worker registry's getMetricsAsJSON(); `problem`: why it is not ready, or null */
  | { type: 'answer'; ask: number; metrics?: unknown; problem?: string | null };
