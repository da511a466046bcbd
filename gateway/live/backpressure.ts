// Backpressure on live sockets. Page, crowd and light frames are latest-value state: a socket whose
// buffer passes bufferBytes leaves its layout's topics (what is published meanwhile skips it, counted),
// is sent the current state when it drains, and is closed with CLOSE.tooSlow if it stays behind for
// slowCloseMs. Answers (ack, error) are not state: they go out whatever, up to uWS's limit.
import { CLOSE } from '../../schemas/live-protocol.js';
import type { SocketRegistry } from './registry.js';
import type { LiveSocket, SocketData } from './socket.js';

/** The uWS topic of a layout's sockets that are in step with its page. */
export const topicOf = (layoutId: string) => `layout:${layoutId}`;
/** The uWS topic of a zone's light looks on a layout (zone * for the looks of every zone). */
export const lightTopicOf = (layoutId: string, zone: string) => `light:${layoutId}:${zone}`;
/** The light topics a socket of the zone is on while in step: its zone's and the layout's. */
export const lightTopicsOf = (layoutId: string, zone: string) => (zone === '' ? [lightTopicOf(layoutId, '*')] : [lightTopicOf(layoutId, zone), lightTopicOf(layoutId, '*')]);

export class Backpressure {
  /** the sockets whose state frames are being skipped */
  private readonly behind = new Map<LiveSocket, SocketData>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly registry: SocketRegistry,
    private readonly o: { bufferBytes: number; slowCloseMs: number; now: () => number; onSkipped?: (frames?: number) => void },
  ) {
    this.sweeper = setInterval(() => this.sweep(), Math.min(1000, o.slowCloseMs / 4));
    this.sweeper.unref();
  }

  /**
   * Sends a state frame (page, crowd) unless the socket is over its buffer: then it is skipped, and
   * the socket gets the current state when it drains. Returns whether it went out.
   */
  sendState(ws: LiveSocket, data: SocketData, text: string): boolean {
    if (data.overSince !== null) {
      data.stale = true;
      this.o.onSkipped?.();
      return false;
    }
    ws.send(text);
    if (ws.getBufferedAmount() > this.o.bufferBytes) this.fellBehind(ws, data);
    return true;
  }

  /** Before a publish to a layout's topic: sockets over their buffer leave it first, and count what they skip. */
  beforePublish(sockets: Iterable<[LiveSocket, SocketData]>, frames: number): void {
    for (const [ws, data] of sockets) {
      if (data.overSince === null && ws.getBufferedAmount() > this.o.bufferBytes) this.fellBehind(ws, data);
      if (data.overSince !== null) this.o.onSkipped?.(frames);
    }
  }

  /** A socket over its buffer: off its layout's topics (what is published meanwhile skips it) until it drains. */
  private fellBehind(ws: LiveSocket, data: SocketData): void {
    data.overSince = this.o.now();
    data.stale = true;
    ws.unsubscribe(topicOf(data.layoutId));
    for (const topic of lightTopicsOf(data.layoutId, data.claims.zone)) ws.unsubscribe(topic);
    this.behind.set(ws, data);
  }

  /** A socket's buffer drained: true when it is back under its limit after skipping state (send it the current state). */
  drained(ws: LiveSocket, data: SocketData): boolean {
    if (data.overSince === null || ws.getBufferedAmount() > this.o.bufferBytes) return false;
    data.overSince = null;
    this.behind.delete(ws);
    data.stale = false;
    return true;
  }

  /** A socket closed. */
  forget(ws: LiveSocket): void {
    this.behind.delete(ws);
  }

  /** Closes the sockets that stayed behind for slowCloseMs with CLOSE.tooSlow. */
  private sweep(): void {
    const now = this.o.now();
    for (const [ws, data] of this.behind) {
      if (data.overSince !== null && now - data.overSince >= this.o.slowCloseMs) {
        this.behind.delete(ws);
        this.registry.end(ws, data, CLOSE.tooSlow, 'too slow to read');
      }
    }
  }

  stop(): void {
    clearInterval(this.sweeper);
  }
}
