// The frames a client sends on its live socket: an action, taken by the same intake as POST
// /action (one participant, one budget, whichever way it acts) and answered by an ack once stored
// or an error with the HTTP API's code; a restatement of the client's latest values after a
// reconnect (counted where none is held, answered the same way); or a refresh of the socket's
// token (token-lifecycle.ts).
// A socket refused as rate_limited (or refused a refresh) FLOOD_CLOSE_AFTER times in a row is closed
// (CLOSE.flooding).
import { CLIENT_OP, CLOSE, FRAME_LIMITS, SERVER_OP } from '../../schemas/live-protocol.js';
import { WHOLE_DOCUMENT, describeFirstError, validateLiveClientFrame, type LiveRestateFrame } from '../../schemas/validators.js';
import { AppError } from '../errors.js';
import { AnswerQueue, DROPPED } from './answers.js';
import { ackFrame, errorFrame, timeFrame } from './frames.js';
import { TokenBuckets, type Rate } from '../limits/token-buckets.js';
import type { SocketRegistry } from './registry.js';
import type { IntakeWaiter } from '../actions/intake.js';
import type { LiveOptions, LiveServices, LiveSocket, SocketData } from './socket.js';
import type { TokenLifecycle } from './token-lifecycle.js';
import { clockZoneOf } from './clock-reports.js';

/** A socket whose actions were refused as rate_limited (or its refreshes refused) this many times in a row is closed (CLOSE.flooding). */
export const FLOOD_CLOSE_AFTER = 50;

const decoder = new TextDecoder('utf-8', { fatal: true });
const PONG = JSON.stringify({ op: SERVER_OP.pong });
const TIME_RATE: Rate = { burst: FRAME_LIMITS.time.socketBurst, ratePerSecond: FRAME_LIMITS.time.socketPerMinute / 60 };

/**
 * One action frame's answer: an ack once stored, or an error frame with the HTTP API's code, queued
 * to go out with the socket's other answers of this turn (answers.ts).
 */
export class FrameAnswer implements IntakeWaiter {
  constructor(
    private readonly ws: LiveSocket,
    private readonly data: SocketData,
    private readonly ref: string,
    private readonly answers: AnswerQueue,
    private readonly onError: (e: unknown) => void,
  ) {}

  stored(): void {
    this.data.refusedInARow = 0;
    this.answers.push(this.ws, this.data, ackFrame(this.ref));
  }

  held(settled: Promise<void>): void {
    settled.then(
      () => {
        this.data.refusedInARow = 0;
        this.answers.push(this.ws, this.data, ackFrame(this.ref, true));
      },
      (e: unknown) => this.failed(e),
    );
  }

  failed(e: unknown): void {
    if (!(e instanceof AppError)) this.onError(e);
    this.answers.push(this.ws, this.data, errorFrame(this.ref, e));
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


export class ActionFrames {
  /** answers to actions, written once per socket and turn */
  private readonly answers: AnswerQueue;

  constructor(
    private readonly s: Pick<LiveServices, 'layouts' | 'intake'>,
    private readonly registry: SocketRegistry,
    private readonly lifecycle: () => TokenLifecycle,
    private readonly o: Pick<LiveOptions, 'now' | 'serverNow' | 'onError' | 'onClockReport'>,
  ) {
    this.answers = new AnswerQueue((ws, data) => this.registry.end(ws, data, CLOSE.tooSlow, 'too slow to read'), o.onError);
  }

  received(ws: LiveSocket, data: SocketData, message: ArrayBuffer, isBinary: boolean): void {
    let frame: unknown;
    try {
      if (isBinary) throw new AppError('invalid_json', 'Frames are JSON text.');
      frame = JSON.parse(decoder.decode(message));
    } catch (e) {
      return this.answer(ws, data, errorFrame(null, e instanceof AppError ? e : new AppError('invalid_json')));
    }
    const ref = typeof (frame as { ref?: unknown } | null)?.ref === 'string' ? ((frame as { ref: string }).ref.slice(0, FRAME_LIMITS.refMaxLength) || null) : null;
    try {
      if (!validateLiveClientFrame(frame, WHOLE_DOCUMENT)) throw new AppError('invalid_body', describeFirstError(validateLiveClientFrame.errors, 'frame'));
      if (frame.op === CLIENT_OP.refresh) return this.lifecycle().refresh(ws, data, frame.token);
      if (frame.op === CLIENT_OP.ping) return this.ping(ws, data);
      if (frame.op === CLIENT_OP.time) return this.time(ws, data, frame.ref, frame.uncertaintyMs);
      if (frame.op === CLIENT_OP.restate) return this.restate(ws, data, frame);
      if (frame.layoutId !== undefined && frame.layoutId !== data.claims.layoutId) throw new AppError('token_layout_mismatch');
      const body = { layoutId: data.claims.layoutId, lid: frame.lid, type: frame.type, value: frame.value }; // one shape, no spread: the hot path
      const waiter = new FrameAnswer(ws, data, frame.ref, this.answers, this.o.onError);
      const at = this.o.now();
      const once = frame.idempotencyKey ?? '';
      const claims = data.claims;
      this.s.intake.accept(body, claims, once, at, waiter);
    } catch (e) {
      this.refused(ws, data, ref, e, false);
    }
  }

  /** The client's latest values after a reconnect (intake.ts): an ack once counted, or an error frame. */
  private restate(ws: LiveSocket, data: SocketData, frame: LiveRestateFrame): void {
    const waiter = new FrameAnswer(ws, data, frame.ref, this.answers, this.o.onError);
    const at = this.o.now();
    const claims = data.claims;
    const restated = Promise.resolve(this.s.layouts.get(claims.layoutId)).then((layout) => this.s.intake.restate(frame.values, claims, layout, at));
    waiter.after(restated);
  }

  /** A heartbeat: `pong`, at most one per socket every FRAME_LIMITS.pingMinMs (a sooner one counts toward the flood close). */
  private ping(ws: LiveSocket, data: SocketData): void {
    const now = this.o.now();
    if (now - data.pongAt < FRAME_LIMITS.pingMinMs) {
      return this.refused(ws, data, null, new AppError('rate_limited', `At most one ping every ${FRAME_LIMITS.pingMinMs} ms.`, undefined, [['retry-after', String(FRAME_LIMITS.pingMinMs / 1000)]]), true);
    }
    data.pongAt = now;
    this.answer(ws, data, PONG);
  }

  /**
   * A clock exchange: `time` with when it was received and answered, in Redis's clock. Past the
   * socket's budget (FRAME_LIMITS.time) an error rate_limited with its ref, which does not count
   * toward the flood close: a clock that syncs too eagerly is told to wait, not cut off.
   */
  private time(ws: LiveSocket, data: SocketData, ref: string, uncertaintyMs: number | undefined): void {
    const receivedAt = this.o.serverNow();
    const wait = (data.times ??= new TokenBuckets(1)).take('socket', TIME_RATE, this.o.now());
    if (wait > 0) {
      return this.answer(ws, data, errorFrame(ref, new AppError('rate_limited', `At most ${FRAME_LIMITS.time.socketBurst} clock exchanges at once and ${FRAME_LIMITS.time.socketPerMinute} a minute per socket.`, undefined, [['retry-after', String(Math.ceil(wait / 1000))]])));
    }
    if (uncertaintyMs !== undefined) {
      data.clockMs = uncertaintyMs;
      this.o.onClockReport?.(data.layoutId, clockZoneOf(data), uncertaintyMs);
    }
    this.answer(ws, data, timeFrame(ref, receivedAt, this.o.serverNow()));
  }

  /**
   * A frame refused at once: its error frame, and toward the flood close when it was past a budget
   * (rate_limited) or a refresh (each one is past what a client needs).
   */
  refused(ws: LiveSocket, data: SocketData, ref: string | null, e: unknown, refresh: boolean): void {
    this.answer(ws, data, errorFrame(ref, e));
    const counts = refresh || (e instanceof AppError && e.code === 'rate_limited');
    if (counts && data.open && ++data.refusedInARow >= FLOOD_CLOSE_AFTER) this.registry.end(ws, data, CLOSE.flooding, 'too many frames past the budget');
  }

  /**
   * An answer sent at once. From inside a frame's handler (where uWS has the socket corked) it goes
   * out before a close that follows it (CLOSE.flooding); answers that come later, from the action log, go
   * through the AnswerQueue. Sent whatever the state frames do, while the socket is open; one that
   * uWS drops past the answers' limit closes the socket with CLOSE.tooSlow.
   */
  answer(ws: LiveSocket, data: SocketData, text: string): void {
    if (data.open && ws.send(text) === DROPPED) this.registry.end(ws, data, CLOSE.tooSlow, 'too slow to read');
  }
}
