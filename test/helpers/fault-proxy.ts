// A fault-injecting TCP proxy for the tests: one phone's network between it and the gateways (this
// machine's kernel has no netem). Each direction has its own latency and jitter (order kept, as
// TCP keeps it) and an optional bandwidth cap; the whole network can stall (bytes and closes wait,
// then flow), be cut (every link reset with RST, and new connections refused with RST until it
// returns), or vanish (bytes and closes wait with no FIN and no RST, a half-open link, until it
// returns: then a link whose far end closed meanwhile is reset, as a TCP stack answers a
// retransmission to a host that forgot the connection). The links open now can also go silent for
// good while new ones pass (a NAT rebinding, a Wi-Fi to cellular handover), both ways or only the
// gateway's way (the phone's frames arrive, nothing comes back). New connections go to the first target
// that accepts, from a rotating start: a load balancer that skips a gateway not listening.
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export interface Direction {
  /** ms added to every chunk */
  latencyMs: number;
  /** ± ms around the latency, uniform */
  jitterMs: number;
  /** bytes a second at most (0: no cap) */
  bytesPerSecond: number;
}

export interface FaultProxyOptions {
  /** the ports it forwards to, on targetHost */
  targets: () => readonly number[];
  /** where the targets are (default 127.0.0.1) */
  targetHost?: string;
  /** the address it listens on (default 127.0.0.1), and the port (default: a free one) */
  host?: string;
  port?: number;
  /** phone -> gateway */
  up?: Partial<Direction>;
  /** gateway -> phone */
  down?: Partial<Direction>;
  /** seeded randomness for the jitter */
  random?: () => number;
  /** the target tried first for the first connection (then the next one's, and so on) */
  firstTarget?: number;
  /** told of each link made, with the target's port */
  onLink?: (port: number) => void;
}

type State = 'up' | 'cut' | 'held';

/** One direction of one link: chunks delivered in order, each no earlier than its due time. */
class Pipe {
  private readonly queue: { data: Buffer | null; due: number }[] = [];
  private timer: NodeJS.Timeout | null = null;
  /** when the last chunk queued is due (order is kept) */
  private lastDue = 0;

  constructor(
    private readonly to: Socket,
    private readonly d: Direction,
    private readonly random: () => number,
    private readonly held: () => boolean,
  ) {}

  /** A chunk, or null for the end (FIN). */
  push(data: Buffer | null): void {
    const now = Date.now();
    const delay = this.d.latencyMs + (this.random() * 2 - 1) * this.d.jitterMs;
    const transfer = data && this.d.bytesPerSecond > 0 ? (data.length * 1000) / this.d.bytesPerSecond : 0;
    this.lastDue = Math.max(now + delay, this.lastDue) + transfer;
    this.queue.push({ data, due: this.lastDue });
    this.pump();
  }

  pump(): void {
    if (this.timer) return;
    while (this.queue.length > 0 && !this.held()) {
      const next = this.queue[0]!;
      const wait = next.due - Date.now();
      if (wait > 0) {
        this.timer = setTimeout(() => {
          this.timer = null;
          this.pump();
        }, wait);
        return;
      }
      this.queue.shift();
      if (this.to.destroyed) continue;
      if (next.data === null) this.to.end();
      else this.to.write(next.data);
    }
  }

  /** Whether the end (FIN) from the far side is waiting here. */
  get endWaiting(): boolean {
    return this.queue.some((c) => c.data === null);
  }

  clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.queue.length = 0;
  }
}

interface Link {
  client: Socket;
  server: Socket;
  up: Pipe;
  down: Pipe;
  /** the gateway's side closed (FIN or reset) */
  serverGone: boolean;
  /** which way the link's path is silent for good (silence()) */
  silent: 'none' | 'both' | 'down';
}

const DIRECTION: Direction = { latencyMs: 0, jitterMs: 0, bytesPerSecond: 0 };

export class FaultProxy {
  private server: Server | undefined;
  private readonly links = new Set<Link>();
  private state: State = 'up';
  private next = 0;
  private readonly up: Direction;
  private readonly down: Direction;
  private readonly random: () => number;
  port = 0;
  /** bytes that came in from the client side (`up`) and from the targets (`down`), over all links */
  readonly bytes = { up: 0, down: 0 };

  constructor(private readonly o: FaultProxyOptions) {
    this.up = { ...DIRECTION, ...o.up };
    this.down = { ...DIRECTION, ...o.down };
    this.random = o.random ?? Math.random;
    this.next = o.firstTarget ?? 0;
  }

  async start(): Promise<number> {
    this.server = createServer({ pauseOnConnect: false }, (client) => this.accept(client));
    await new Promise<void>((r) => this.server!.listen(this.o.port ?? 0, this.o.host ?? '127.0.0.1', r));
    this.port = (this.server.address() as { port: number }).port;
    return this.port;
  }

  /** Links open now. */
  get open(): number {
    return this.links.size;
  }

  private accept(client: Socket): void {
    client.on('error', () => {});
    if (this.state === 'cut') return void client.resetAndDestroy(); // no network: the phone's connect fails at once
    const targets = this.o.targets();
    const start = this.next++;
    const tryTarget = (i: number) => {
      if (i >= targets.length) return void client.resetAndDestroy();
      const port = targets[(start + i) % targets.length]!;
      const server = createConnection({ host: this.o.targetHost ?? '127.0.0.1', port });
      server.once('error', () => (link ? server.destroy() : tryTarget(i + 1))); // not listening: the next one
      let link: Link | null = null;
      server.once('connect', () => {
        server.on('error', () => {});
        link = this.link(client, server);
        this.o.onLink?.(port);
      });
    };
    tryTarget(0);
  }

  private link(client: Socket, server: Socket): Link {
    const held = () => this.state === 'held';
    const link: Link = { client, server, up: null!, down: null!, serverGone: false, silent: 'none' };
    link.up = new Pipe(server, this.up, this.random, () => held() || link.silent === 'both');
    link.down = new Pipe(client, this.down, this.random, () => held() || link.silent !== 'none');
    this.links.add(link);
    client.on('data', (d: Buffer) => {
      this.bytes.up += d.length;
      link.up.push(d);
    });
    server.on('data', (d: Buffer) => {
      this.bytes.down += d.length;
      link.down.push(d);
    });
    client.on('end', () => link.up.push(null));
    server.on('end', () => {
      link.serverGone = true;
      link.down.push(null);
    });
    client.on('close', () => {
      this.links.delete(link);
      if (this.state !== 'held' && link.silent === 'none') server.destroy(); // a silent path carries no FIN either
    });
    server.on('close', (hadError) => {
      link.serverGone = true;
      if (hadError && this.state !== 'held' && link.silent === 'none') this.reset(link);
    });
    return link;
  }

  private reset(link: Link): void {
    link.up.clear();
    link.down.clear();
    this.links.delete(link);
    link.client.resetAndDestroy();
    link.server.resetAndDestroy();
  }

  /** The network stalls for `ms`: bytes and closes wait, then flow in order. */
  async stall(ms: number): Promise<void> {
    this.state = 'held';
    await new Promise((r) => setTimeout(r, ms));
    this.resume();
  }

  /** Cuts the network: every link is reset (RST both ways), and connections are refused until `restore`. */
  cut(): void {
    this.state = 'cut';
    for (const link of [...this.links]) this.reset(link);
  }

  /**
   * The paths of the links open now go silent for good, with no FIN and no RST: nothing passes on
   * them (`down`: only what the gateway sends is lost; the phone's bytes still arrive). New links pass.
   */
  silence(direction: 'both' | 'down' = 'both'): void {
    for (const link of this.links) link.silent = direction;
  }

  /** The link vanishes: nothing passes, no FIN, no RST (half-open), until `restore`. */
  vanish(): void {
    this.state = 'held';
  }

  /** The network is back. A link whose gateway side closed while it was held is reset, as TCP would. */
  restore(): void {
    this.resume();
  }

  private resume(): void {
    const wasHeld = this.state === 'held';
    this.state = 'up';
    if (!wasHeld) return;
    for (const link of [...this.links]) {
      if (link.serverGone && link.server.destroyed && !link.down.endWaiting) this.reset(link);
      else {
        link.up.pump();
        link.down.pump();
      }
    }
  }

  async stop(): Promise<void> {
    const closed = new Promise((r) => this.server?.close(r));
    for (const link of [...this.links]) this.reset(link);
    await closed;
  }
}
