// OSC over TCP to one target: `tcp` frames each packet with its int32 length (OSC 1.0), `tcp-slip`
// with SLIP (OSC 1.1, RFC 1055: escaped, an END byte after each packet). It connects on the first send,
// reconnects with backoff (0.1 s doubling to 1 s) after a close or an error, and is not ready while it has no connection
// or while the peer has not read what was written (then the scheduler keeps the deliveries, newest
// value of a Slider only, until they age out: bridge/target-queue.ts).
import { Socket } from 'node:net';
import { targetName, type OscTarget, type Target } from './sender.js';

export type TcpFraming = 'tcp' | 'tcp-slip';

const END = 0xc0;
const ESC = 0xdb;
const ESC_END = 0xdc;
const ESC_ESC = 0xdd;

/**
 * A packet as SLIP frames it (RFC 1055): END and ESC escaped, an END after it. No END before it:
 * TCP has no line noise to flush, and liblo takes a stream that starts with END for a length
 * prefix it cannot read.
 */
export function slipFrame(packet: Buffer): Buffer {
  let extra = 1;
  for (const b of packet) if (b === END || b === ESC) extra++;
  const out = Buffer.allocUnsafe(packet.length + extra);
  let at = 0;
  for (const b of packet) {
    if (b === END) {
      out[at++] = ESC;
      out[at++] = ESC_END;
    } else if (b === ESC) {
      out[at++] = ESC;
      out[at++] = ESC_ESC;
    } else out[at++] = b;
  }
  out[at++] = END;
  return out;
}

/** A packet with its int32 big-endian length before it (OSC 1.0 over a stream). */
export function lengthFrame(packet: Buffer): Buffer {
  const out = Buffer.allocUnsafe(packet.length + 4);
  out.writeInt32BE(packet.length, 0);
  packet.copy(out, 4);
  return out;
}

const BACKOFF_MIN_MS = 100;
/** at most this between attempts: a display that comes back is found (and up again) within it */
const BACKOFF_MAX_MS = 1000;
/** a connection attempt that hears nothing (a host that is off) is given up after this */
const CONNECT_TIMEOUT_MS = 3000;
/** Bytes written and not yet taken by the peer past which the target counts as not ready. */
const MAX_UNREAD_BYTES = 1 << 20;

export class TcpTarget implements OscTarget {
  readonly name: string;
  /** TCP reports no refused datagram: a lost connection is a failed send */
  readonly refusals = 0;
  private socket: Socket | null = null;
  private connected = false;
  private failures = 0;
  private retryAt = 0;

  constructor(
    readonly target: Target,
    private readonly framing: TcpFraming,
    private readonly now: () => number = Date.now,
  ) {
    this.name = targetName(target);
  }

  /** Connected (or about to try again) and the peer keeps up with what is written. */
  ready(): boolean {
    if (!this.connected) {
      if (this.socket === null && this.now() >= this.retryAt) this.connect();
      return false;
    }
    return this.socket!.writableLength <= MAX_UNREAD_BYTES;
  }

  /** Whether the display is reachable: a connection is open. */
  up(): boolean {
    return this.connected;
  }

  private connect(): void {
    const socket = new Socket();
    this.socket = socket;
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 5000);
    socket.setTimeout(CONNECT_TIMEOUT_MS, () => socket.destroy());
    socket.on('connect', () => {
      socket.setTimeout(0);
      this.connected = true;
      this.failures = 0;
    });
    socket.on('data', () => {}); // a display's replies are not read; drained so they never fill a buffer
    socket.on('error', () => {}); // followed by 'close'
    socket.on('close', () => {
      if (this.socket !== socket) return;
      this.socket = null;
      this.connected = false;
      this.failures++;
      this.retryAt = this.now() + Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** (this.failures - 1));
    });
    socket.connect(this.target.port, this.target.host);
  }

  confirmed(): void {}

  /** A TCP target knows from its connection whether the display is there; ready() reconnects. */
  probe(): void {
    this.ready();
  }

  /**
   * Writes the packets, framed, in order, without waiting for the peer (a stalled display must not
   * hold the tick of the others: ready() turns false instead); rejects when there is no connection.
   */
  send(packets: Buffer[]): Promise<void> {
    const socket = this.socket;
    if (!socket || !this.connected) return Promise.reject(new Error(`not connected to ${this.name}`));
    const frame = this.framing === 'tcp' ? lengthFrame : slipFrame;
    socket.write(packets.length === 1 ? frame(packets[0]!) : Buffer.concat(packets.map(frame)));
    return Promise.resolve();
  }

  close(): void {
    const socket = this.socket;
    this.socket = null;
    this.connected = false;
    socket?.destroy();
  }
}
