// The stop signals of a long-running process: SIGTERM from systemd (or a supervisor), SIGINT from Ctrl-C.

/**
 * The first SIGTERM or SIGINT from now on. Call it before the process starts or says it is up (a
 * log line, READY=1): a signal that comes in between is then the caller's to handle, where Node's
 * default would kill the process before it drains. Later signals are ignored, so a second one
 * (systemd signals a whole control group; a supervisor forwards it too) cannot cut a drain short.
 */
export function stopSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    process.on('SIGTERM', resolve);
    process.on('SIGINT', resolve);
  });
}

/** What `task` resolves to, or null if `ms` pass first (a failure rejects, as the task does): a start a stop signal interrupted gets this long to finish. */
export function settledWithin<T>(task: Promise<T>, ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), ms)));
  return Promise.race([task, timeout]).finally(() => clearTimeout(timer));
}
