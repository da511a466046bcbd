// One live socket: what the gateway keeps with it, and how an answer to one of its frames goes out.
import type { WebSocket } from 'uWebSockets.js';
import type { IntakeWaiter } from '../actions/intake.js';
import type { AudienceClaims } from '../auth/audience-tokens.js';
import { AppError } from '../errors.js';
import { CLOSE, ackFrame, errorFrame } from './frames.js';

export interface SocketData {
  claims: AudienceClaims;
  layoutId: string;
  /** the version of the layout whose page this socket was last sent */
  version: number;
  open: boolean;
  /** actions refused as rate_limited in a row (an accepted one resets it) */
  refusedInARow: number;
  /** since when the socket's buffer is over its limit (state frames are skipped meanwhile), or null */
  overSince: number | null;
  /** a state frame was skipped: the socket gets the current state when it drains */
  stale: boolean;
  /** when the upgrade completed */
  openedAt: number;
}
export type LiveSocket = WebSocket<SocketData>;

/** uWS's answer to a send dropped past maxBackpressure. */
const DROPPED = 2;

/** An answer (ack, error) goes out whatever the state frames do; one dropped past the buffer's limit closes the socket (4008). */
export function sendAnswer(ws: LiveSocket, data: SocketData, text: string): void {
  if (ws.send(text) === DROPPED) {
    data.open = false;
    ws.end(CLOSE.tooSlow, 'too slow to read');
  }
}

/**
 * One action frame's answer: an ack once stored, or an error frame with the HTTP API's code. Sent
 * only while the socket is open (uWS throws on a send to a closed one), which the socket's data
 * says: the close handler marks it.
 */
export class FrameAnswer implements IntakeWaiter {
  constructor(
    private readonly ws: LiveSocket,
    private readonly data: SocketData,
    private readonly ref: string,
    private readonly onError: (e: unknown) => void,
  ) {}

  stored(): void {
    this.data.refusedInARow = 0;
    if (this.data.open) sendAnswer(this.ws, this.data, ackFrame(this.ref));
  }

  failed(e: unknown): void {
    if (!(e instanceof AppError)) this.onError(e);
    if (this.data.open) sendAnswer(this.ws, this.data, errorFrame(this.ref, e));
  }

  aborted(): boolean {
    return !this.data.open;
  }

  after(settled: Promise<void>): void {
    settled.then(
      () => this.stored(),
      (e: unknown) => this.failed(e),
    );
  }
}
