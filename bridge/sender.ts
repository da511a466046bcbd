// The only file that touches UDP. One connected socket per target: the kernel then reports a
// display that refuses (ICMP port unreachable) as an ECONNREFUSED 'error' event shortly after
// the send, which `refusals` counts so the scheduler can resend what was lost; name resolution
// happens once per (re)connect. A failing target is retried with exponential backoff.
import { createSocket, type Socket } from 'node:dgram';
import { isIPv6 } from 'node:net';

export interface Target {
  host: string;
  port: number;
}

/** A display the scheduler sends OSC packets to: over UDP (UdpTarget) or TCP (tcp-target.ts). */
export interface OscTarget {
  readonly name: string;
  /** refused datagrams reported so far (UDP's ICMP port unreachable; 0 over TCP) */
  readonly refusals: number;
  /** false while backing off, or (TCP) while not connected or the peer lags */
  ready(): boolean;
  /** whether the display is reachable, as far as the transport can tell */
  up(): boolean;
  /** a batch went through without a refusal */
  confirmed(): void;
  send(packets: Buffer[]): Promise<void>;
  /** called every tick: lets a transport find out whether the display is there while nothing is sent */
  probe(): void;
  close(): void;
}

export function targetName(t: Target): string {
  return isIPv6(t.host) ? `[${t.host}]:${t.port}` : `${t.host}:${t.port}`;
}

const BACKOFF_MIN_MS = 100;
const BACKOFF_MAX_MS = 5000;
/** A target sent nothing for this long gets an empty bundle, so that a refusal says it is gone. */
const PROBE_IDLE_MS = 1000;
/** A probe not refused within this long means the display is there. */
const PROBE_ANSWER_MS = 200;
/** "#bundle", immediately, no element: valid OSC that receivers act on by doing nothing. */
const EMPTY_BUNDLE = Buffer.from('2362756e646c6500' + '0000000000000001', 'hex');

export class UdpTarget implements OscTarget {
  readonly name: string;
  private socket: Socket | null = null;
  private connecting: Promise<Socket> | null = null;
  private failures = 0;
  private retryAt = 0;
  /** ECONNREFUSED reports so far: each means an earlier datagram was refused by the display */
  refusals = 0;
  private lastSendAt = 0;
  /** the probe in flight: when it went, and the refusals then */
  private probing: { at: number; refusals: number } | null = null;

  constructor(
    readonly target: Target,
    private readonly now: () => number = Date.now,
  ) {
    this.name = targetName(target);
  }

  /** False while backing off after a failure. */
  ready(): boolean {
    return this.now() >= this.retryAt;
  }

  /** No refusal or failure since the last batch that went through. */
  up(): boolean {
    return this.failures === 0;
  }

  private connect(): Promise<Socket> {
    if (this.socket) return Promise.resolve(this.socket);
    this.connecting ??= new Promise<Socket>((resolve, reject) => {
      const socket = createSocket(isIPv6(this.target.host) ? 'udp6' : 'udp4');
      socket.on('error', (e: NodeJS.ErrnoException) => {
        if (e.code === 'ECONNREFUSED') {
          this.refusals++;
          this.backOff();
        } else this.reset(); // anything else: reconnect on the next send
      });
      socket.connect(this.target.port, this.target.host, (err?: Error) => {
        this.connecting = null;
        if (err) {
          socket.close();
          reject(err);
        } else {
          this.socket = socket;
          resolve(socket);
        }
      });
    });
    return this.connecting;
  }

  private backOff(): void {
    this.failures++;
    this.retryAt = this.now() + Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** (this.failures - 1));
  }

  /** The scheduler saw a batch through without a refusal: the display is up. */
  confirmed(): void {
    this.failures = 0;
    this.retryAt = 0;
  }

  private reset(): void {
    this.socket?.close();
    this.socket = null;
  }

  /**
   * UDP answers nothing, but a connected socket hears ICMP port unreachable: while nothing else is
   * sent, an empty bundle a second keeps up() true to whether the display is there.
   */
  probe(): void {
    const now = this.now();
    if (this.probing) {
      if (this.refusals > this.probing.refusals) this.probing = null; // refused: backing off, down
      else if (now - this.probing.at >= PROBE_ANSWER_MS) {
        this.probing = null;
        this.confirmed();
      }
      return;
    }
    if (!this.ready() || now - this.lastSendAt < PROBE_IDLE_MS) return;
    this.probing = { at: now, refusals: this.refusals };
    this.lastSendAt = now;
    this.send([EMPTY_BUNDLE]).catch(() => {}); // a failure backs off, as for any send
  }

  /** Sends the datagrams in order; rejects on the first failure (and starts backing off). */
  async send(datagrams: Buffer[]): Promise<void> {
    this.lastSendAt = this.now();
    try {
      const socket = await this.connect();
      await Promise.all(datagrams.map((d) => new Promise<void>((resolve, reject) => socket.send(d, (err) => (err ? reject(err) : resolve())))));
    } catch (e) {
      this.reset();
      this.backOff();
      throw e;
    }
  }

  close(): void {
    this.reset();
  }
}
