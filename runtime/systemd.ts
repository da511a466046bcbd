// sd_notify through systemd's own `systemd-notify` program (Node cannot send unix datagrams).
// The npm package "systemd-notify" only wraps --ready and --status; we need WATCHDOG=1 and
// STOPPING=1 too, so this calls the program directly. Without NOTIFY_SOCKET it does nothing.
import { execFile } from 'node:child_process';

export class SystemdNotifier {
  private chain: Promise<void> = Promise.resolve();
  /**
   * A WATCHDOG=1 queued and not yet handed to systemd-notify. Another ping asked for meanwhile is
   * the same one: when each systemd-notify takes longer than the watchdog's interval (a busy
   * machine, a slow service manager), pings would otherwise pile up without bound, and READY=1 or
   * STOPPING=1 would wait behind all of them.
   */
  private pingQueued: Promise<void> | null = null;

  constructor(
    private readonly env: NodeJS.ProcessEnv = process.env,
    /** told of every notification systemd-notify could not deliver (missing program, refused socket, timeout) */
    private readonly onError: (e: Error) => void = () => {},
  ) {}

  get enabled(): boolean {
    return Boolean(this.env.NOTIFY_SOCKET);
  }

  /**
   * Sends `KEY=value` assignments, in call order, except that a WATCHDOG=1 asked for while another
   * waits to be sent is that one. Never rejects (a notification is best effort); failures go to onError.
   */
  notify(...assignments: string[]): Promise<void> {
    if (!this.enabled) return Promise.resolve();
    const ping = assignments.length === 1 && assignments[0] === 'WATCHDOG=1';
    if (ping && this.pingQueued) return this.pingQueued;
    this.chain = this.chain.then(
      () =>
        new Promise<void>((resolve) => {
          if (ping) this.pingQueued = null; // a ping asked for from now on says the process lives later
          execFile('systemd-notify', [`--pid=${process.pid}`, ...assignments], { env: this.env, timeout: 5000 }, (err, _stdout, stderr) => {
            if (err) this.onError(new Error(`${assignments.join(' ')}: ${String(stderr).trim() || err.message}`));
            resolve();
          });
        }),
    );
    if (ping) this.pingQueued = this.chain;
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
