// Hosts for a test: network namespaces, each with one address on a private /24, joined by veth
// pairs on a Linux bridge. The test's own process (the root namespace) holds the bridge's address,
// .1, so it reaches every host. Everything goes at remove(), also after a failed test: the hosts'
// processes (SIGKILL), the namespaces and the bridge.
import { execFileSync, spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { randomBytes } from 'node:crypto';

export interface Host {
  name: string;
  ns: string;
  ip: string;
}

function ip(...args: string[]): void {
  const r = spawnSync('ip', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ip ${args.join(' ')}: ${r.stderr}`);
}

export class Hosts {
  private readonly tag = randomBytes(3).toString('hex');
  /** 10.<a>.<b>.0/24, picked at random among 10.200.0.0 to 10.249.255.0 */
  private readonly net = `10.${200 + (randomBytes(1)[0]! % 50)}.${randomBytes(1)[0]!}`;
  private readonly bridge = `acbr${this.tag}`;
  private readonly hosts: Host[] = [];
  private readonly children: ChildProcess[] = [];
  /** addresses of hosts' that the test's own namespace took over (intercept) */
  private readonly intercepted: string[] = [];

  /** The Linux bridge's interface name (a capture of the hosts' traffic listens on it). */
  get bridgeName(): string {
    return this.bridge;
  }

  /** The test's own address on the hosts' network. */
  get self(): string {
    return `${this.net}.1`;
  }

  /** The bridge, with the test's address on it. */
  start(): void {
    ip('link', 'add', this.bridge, 'type', 'bridge');
    ip('addr', 'add', `${this.self}/24`, 'dev', this.bridge);
    ip('link', 'set', this.bridge, 'up');
  }

  /** A host with the address .<octet>. */
  add(name: string, octet: number): Host {
    const ns = `ac${this.tag}-${name}`;
    const veth = `ac${this.tag}${this.hosts.length}`;
    ip('netns', 'add', ns);
    const host = { name, ns, ip: `${this.net}.${octet}` };
    this.hosts.push(host);
    ip('link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns);
    ip('link', 'set', veth, 'master', this.bridge, 'up');
    ip('-n', ns, 'addr', 'add', `${host.ip}/24`, 'dev', 'eth0');
    ip('-n', ns, 'link', 'set', 'eth0', 'up');
    ip('-n', ns, 'link', 'set', 'lo', 'up');
    return host;
  }

  /** A second address for the host, .<octet>. */
  alias(host: Host, octet: number): string {
    const address = `${this.net}.${octet}`;
    ip('-n', host.ns, 'addr', 'add', `${address}/24`, 'dev', 'eth0');
    return address;
  }

  /**
   * `from` reaches `target`'s address through the test's own namespace, where a proxy of the test
   * listens on that address (and reaches the target at another of its addresses): the address is
   * the test's own too (not answered for on the bridge, so every other host still reaches the
   * target itself), and `from` routes it to the test.
   */
  intercept(from: Host, target: Host): void {
    if (this.intercepted.length === 0) spawnSync('sysctl', ['-q', '-w', `net.ipv4.conf.${this.bridge}.arp_ignore=1`]);
    ip('addr', 'add', `${target.ip}/32`, 'dev', 'lo');
    this.intercepted.push(target.ip);
    ip('-n', from.ns, 'route', 'add', `${target.ip}/32`, 'via', this.self);
  }

  /** A process on the host; killed at remove(). */
  run(host: Host, command: string, args: string[], options: SpawnOptions = {}): ChildProcess {
    const child = spawn('ip', ['netns', 'exec', host.ns, command, ...args], { stdio: 'pipe', ...options });
    this.children.push(child);
    return child;
  }

  /**
   * The host is lost: its address taken down, then every process in it killed with SIGKILL. In
   * that order, so the kernel has no address to send the dying sockets' FIN or RST from: its peers
   * hear nothing, as from a host that lost its power.
   */
  lose(host: Host): void {
    ip('-n', host.ns, 'addr', 'del', `${host.ip}/24`, 'dev', 'eth0');
    this.killAll(host);
  }

  private killAll(host: Host): void {
    const pids = spawnSync('ip', ['netns', 'pids', host.ns], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean);
    for (const pid of pids) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        // gone already
      }
    }
  }

  remove(): void {
    for (const host of this.hosts) this.killAll(host);
    for (const c of this.children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    for (const host of this.hosts) spawnSync('ip', ['netns', 'del', host.ns]);
    for (const address of this.intercepted.splice(0)) spawnSync('ip', ['addr', 'del', `${address}/32`, 'dev', 'lo']);
    spawnSync('ip', ['link', 'del', this.bridge]);
  }
}

/** Resolves once a host's process printed `text` (stdout or stderr); rejects if it exits first or `ms` pass. */
export function printed(child: ChildProcess, text: RegExp, ms: number, what: string): Promise<void> {
  let out = '';
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not start within ${ms} ms: ${out.slice(-2000)}`)), ms);
    const seen = (d: Buffer) => {
      out += String(d);
      if (text.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', seen);
    child.stderr?.on('data', seen);
    child.once('exit', (code) => reject(new Error(`${what} exited with ${code}: ${out.slice(-2000)}`)));
  });
}

/** Whether something answers TLS at `https://<address>/healthz` (curl -k: the test's own certificate is not trusted by fetch). */
export function answersTls(address: string): boolean {
  try {
    execFileSync('curl', ['-sk', '-o', '/dev/null', '--max-time', '1', `https://${address}/healthz`]);
    return true;
  } catch {
    return false;
  }
}
