// A TCP proxy in front of Redis whose links can be held: held bytes wait in the proxy, as on a
// network that stopped delivering (a black-holed Redis), and flow again on release. A link can also
// be held from a command on, or after a count of its client's bytes (between two commands).
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export interface ProxyLink {
  /** what the client sent first (ioredis sends CLIENT SETNAME <connectionName>) */
  hello: string;
  held: boolean;
  /** the client's bytes that still pass before the link is held (undefined: no such count) */
  passing?: number;
}

export class TcpProxy {
  private server: Server | undefined;
  readonly links: ProxyLink[] = [];
  private readonly releasers = new Set<() => void>();
  private holdNew = false;
  /** holds a link from the first chunk its client sends that matches (that chunk included) */
  private holdAt: ((chunk: string) => boolean) | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(private readonly targetPort: number) {}

  async start(): Promise<number> {
    this.server = createServer((client) => this.link(client));
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as { port: number }).port;
    return this.port;
  }

  private link(client: Socket): void {
    const upstream = createConnection({ host: '127.0.0.1', port: this.targetPort });
    this.sockets.add(client).add(upstream);
    const link: ProxyLink = { hello: '', held: this.holdNew };
    this.links.push(link);
    const pipe = (from: Socket, to: Socket, first: boolean) => {
      const queue: Buffer[] = [];
      const flush = () => {
        while (!link.held && queue.length) {
          let chunk = queue.shift()!;
          if (first && link.passing !== undefined) {
            if (chunk.length > link.passing) {
              queue.unshift(chunk.subarray(link.passing));
              chunk = chunk.subarray(0, link.passing);
            }
            link.passing -= chunk.length;
            if (link.passing === 0) [link.held, link.passing] = [true, undefined];
          }
          to.write(chunk);
        }
      };
      this.releasers.add(flush);
      from.on('data', (d: Buffer) => {
        if (first) {
          const text = d.toString('latin1');
          if (link.hello.length < 200) link.hello += text;
          if (this.holdAt?.(text)) link.held = true;
        }
        queue.push(d);
        flush();
      });
    };
    pipe(client, upstream, true);
    pipe(upstream, client, false);
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
  }

  /** Holds every link whose first bytes match; with no filter, every link including new ones. */
  hold(filter?: (l: ProxyLink) => boolean): void {
    if (!filter) this.holdNew = true;
    for (const l of this.links) if (!filter || filter(l)) l.held = true;
  }

  /** Holds each link from the first chunk its client sends that matches, such as a command's name. */
  holdFrom(match: (chunk: string) => boolean): void {
    this.holdAt = match;
  }

  /** Lets `bytes` more of each open link's client bytes through, then holds the link. */
  holdAfter(bytes: number): void {
    for (const l of this.links) if (!l.held) l.passing = bytes;
  }

  /** Whether any link is held now. */
  get holding(): boolean {
    return this.links.some((l) => l.held);
  }

  release(): void {
    this.holdNew = false;
    this.holdAt = undefined;
    for (const l of this.links) [l.held, l.passing] = [false, undefined];
    for (const r of this.releasers) r();
  }

  /** Cuts every link, as a network failure would. */
  cut(): void {
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }

  async stop(): Promise<void> {
    const closed = new Promise((r) => this.server?.close(r));
    this.cut();
    await closed;
  }
}
