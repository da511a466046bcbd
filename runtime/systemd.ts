// sd_notify through systemd's own `systemd-notify` program (Node cannot send unix datagrams).
// The npm package "systemd-notify" only wraps --ready and --status; we need WATCHDOG=1 and
// STOPPING=1 too, so this calls the program directly. Without NOTIFY_SOCKET it does nothing.
import { execFile } from 'node:child_process';

export class SystemdNotifier {
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly env: NodeJS.ProcessEnv = process.env,
    /** told of every notification systemd-notify could not deliver (missing program, refused socket, timeout) */
    private readonly onError: (e: Error) => void = () => {},
  ) {}

  get enabled(): boolean {
    return Boolean(this.env.NOTIFY_SOCKET);
  }

  /** Sends `KEY=value` assignments, in call order. Never rejects (a notification is best effort); failures go to onError. */
  notify(...assignments: string[]): Promise<void> {
    if (!this.enabled) return Promise.resolve();
    this.chain = this.chain.then(
      () =>
        new Promise<void>((resolve) => {
          execFile('systemd-notify', [`--pid=${process.pid}`, ...assignments], { env: this.env, timeout: 5000 }, (err, _stdout, stderr) => {
            if (err) this.onError(new Error(`${assignments.join(' ')}: ${String(stderr).trim() || err.message}`));
            resolve();
          });
        }),
    );
    return this.chain;
  }

  /** How often to send WATCHDOG=1 (half of WatchdogSec), or null when systemd set no watchdog for us. */
  watchdogIntervalMs(): number | null {
    const usec = Number(this.env.WATCHDOG_USEC);
    const pid = this.env.WATCHDOG_PID;
    if (!usec || (pid && Number(pid) !== process.pid)) return null;
    return Math.max(50, Math.floor(usec / 2000));
  }
}
