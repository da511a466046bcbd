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

/** What `task` resolves to, or null once it fails or `ms` pass first: a start a stop signal interrupted gets this long to finish. */
export function settledWithin<T>(task: Promise<T>, ms: number): Promise<T | null> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), ms);
    task.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      () => {
        clearTimeout(timer);
        resolve(null);
      },
    );
  });
}
