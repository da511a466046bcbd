// Runs a private redis-server child on loopback: the embedded default of `npm start` and the
// server every test talks to. AOF is on (appendfsync everysec unless `extraArgs` say otherwise): a
// kill -9 loses only writes Redis answered while a slow fsync held their AOF write back. It ends
// with the process that started it, however that ends (setpriv --pdeathsig: the kernel sends it
// SIGTERM), and its stderr is read here: a crashed demo or bench leaves no Redis running and no
// pipe of its parent's held open.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { portIsFree } from './ports.js';

export interface RedisServerOptions {
  /** data directory (AOF files) */
  dir: string;
  /** fixed port; a free one when omitted */
  port?: number;
  appendOnly?: boolean;
  /** more redis-server arguments (a TLS port and its certificates, say) */
  extraArgs?: readonly string[];
}

export interface RedisServer {
  readonly port: number;
  readonly url: string;
  readonly pid: number | undefined;
  /** SIGTERM and wait for exit. */
  stop(): Promise<void>;
  /** SIGKILL and wait for exit (an abrupt crash). */
  kill(): Promise<void>;
  /** Start again on the same port and directory, after stop() or kill(). */
  restart(): Promise<void>;
}

/** Ports are handed out from here up to the ephemeral range. */
const PORTS_FROM = 20_000;

/** The first port the kernel hands to outgoing connections (ip_local_port_range), 32768 if unknown. */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > PORTS_FROM + 100 ? low : 32768;
  } catch {
    return 32768;
  }
}

/**
 * A port free a moment ago on 127.0.0.1, for a process about to bind it. It is drawn at random
 * below the kernel's ephemeral range: an outgoing connection (of this process or any other) takes
 * its local port from that range, so it could take a port from there between this check and the
 * bind; below it, only another caller drawing the same port at the same moment could.
 */
export async function freePort(): Promise<number> {
  const high = ephemeralLow();
  for (let i = 0; i < 100; i++) {
    const port = PORTS_FROM + Math.floor(Math.random() * (high - PORTS_FROM));
    if (await portIsFree({ host: '127.0.0.1', port, protocol: 'tcp' })) return port;
  }
  throw new Error(`no free port found between ${PORTS_FROM} and ${high}`);
}

/** Resolves once `PING` answers on the port (`+PONG`, or `-NOAUTH` from a server that wants a password), or rejects after `timeoutMs`. */
export async function waitForRedis(port: number, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const sock = createConnection({ host: '127.0.0.1', port });
      sock.setTimeout(500);
      sock.once('connect', () => sock.write('PING\r\n'));
      sock.once('data', (d) => {
        sock.destroy();
        resolve(/^(\+PONG|-NOAUTH)/.test(d.toString())); // a server that wants a password is up too
      });
      sock.once('error', () => resolve(false));
      sock.once('timeout', () => {
        sock.destroy();
        resolve(false);
      });
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`redis-server on port ${port} did not answer within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The process id the Redis on the port reports (INFO server), or null. */
function answeringPid(port: number): Promise<number | null> {
  return new Promise((resolve) => {
    const sock = createConnection({ host: '127.0.0.1', port });
    let text = '';
    sock.setTimeout(1000);
    sock.once('connect', () => sock.write('INFO server\r\n'));
    sock.on('data', (d) => {
      text += d.toString();
      const m = /process_id:(\d+)/.exec(text);
      if (m) {
        sock.destroy();
        resolve(Number(m[1]));
      }
    });
    sock.once('error', () => resolve(null));
    sock.once('timeout', () => {
      sock.destroy();
      resolve(null);
    });
  });
}

/** Characters of a server's log kept to explain a failed start. */
const LOG_KEPT = 4096;
/** The log's last lines that say something (not the banner), on one line. */
function lastLines(log: string): string {
  const lines = log.split('\n').map((l) => l.replace(/^\d+:[A-Z] [^#*]*[#*] /, '').trim()).filter((l) => l !== '' && !l.startsWith('oO0OoO0OoO0Oo') && !l.startsWith('WARNING Memory overcommit'));
  return lines.slice(-3).join(' / ') || '(nothing logged)';
}

export async function startRedisServer(opts: RedisServerOptions): Promise<RedisServer> {
  const port = opts.port ?? (await freePort());
  mkdirSync(opts.dir, { recursive: true });
  const args = [
    '--port', String(port),
    '--bind', '127.0.0.1',
    '--dir', opts.dir,
    '--appendonly', opts.appendOnly === false ? 'no' : 'yes',
    '--save', '',
    '--daemonize', 'no',
    '--logfile', '',
    '--loglevel', 'warning',
    ...(opts.extraArgs ?? []),
  ];
  let child: ChildProcess;
  const launch = async (): Promise<void> => {
    // Another server on the port would answer the PING below as if it were this one: refuse it
    // before starting, and check the one that answers is the child started here.
    if (!(await portIsFree({ host: '127.0.0.1', port, protocol: 'tcp' }))) throw new Error(`port ${port} is in use (another Redis, or another program)`);
    // setpriv execs redis-server in place (same pid) after asking the kernel for SIGTERM when this process ends
    child = spawn('setpriv', ['--pdeathsig', 'TERM', 'redis-server', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    // its log (warnings only) goes to stdout: the last of it says why a start failed
    let log = '';
    child.stdout!.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-LOG_KEPT)));
    child.stderr!.on('data', (d: Buffer) => process.stderr.write(d));
    const failed = new Promise<never>((_, reject) => {
      child.once('error', (e) => reject(new Error(`cannot run setpriv redis-server: ${e.message}`)));
      child.once('exit', (code) => reject(new Error(`redis-server exited with code ${code}: ${lastLines(log)}`)));
    });
    await Promise.race([waitForRedis(port), failed]);
    const pid = await answeringPid(port);
    if (pid !== child.pid) {
      child.kill('SIGKILL');
      throw new Error(`port ${port} is answered by another Redis (pid ${pid}), not the one started here`);
    }
  };
  const signal = async (sig: NodeJS.Signals): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill(sig);
    await exited;
  };
  await launch();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    get pid() {
      return child.pid;
    },
    stop: () => signal('SIGTERM'),
    kill: () => signal('SIGKILL'),
    restart: launch,
  };
}
