// The audience app's side of the live channel, for browsers, Node and React Native: one socket to
// the gateway, reconnected as the close codes say (schemas/live-protocol.ts) with full-jitter
// backoff; the token renewed through the app's callback before it expires, on CLOSE.tokenInvalid and CLOSE.tokenExpired, and
// after two failed opens in a row (all a browser sees of a 401 before the upgrade); the live page
// and the crowd's values kept as state, replayed to listeners added late; actions sent with a
// promise of their ack. A link that goes silent without a close (a NAT rebinding, a Wi-Fi to
// cellular handover, a vanished host) is found by the heartbeat: a quiet socket pings, and one that
// sent and heard nothing back for FRAME_LIMITS.heartbeatDeadMs is left for a new one; a new socket
// restates the latest acked value of each aggregated control, so a participant whose gateway was
// lost counts in the crowd again at once. The socket also estimates the gateway's clock
// (`time` exchanges, server-clock.ts): serverNow() is the deployment's time, within
// clockUncertaintyMs(), which each exchange reports to the gateway. Light looks (`light`) say what the
// phone shows from a server time on; shownAt and FlashGuard (schemas/light.ts) render them. A browser
// that goes offline makes the client `offline` until it is back. No dependencies: in a browser it
// uses the global WebSocket; in Node pass one (the `ws` package).
import { CLIENT_OP, CLOSE, CLOSE_ACTION, FRAME_LIMITS, SERVER_OP, liveSubprotocols, retryAfterOf, type CloseCode } from '../schemas/live-protocol.js';
import type { ActionFrame, Control, CrowdFrame, LightFrame, PageFrame } from '../schemas/live-types.js';
import { isErrorCode, type ErrorCode } from '../schemas/error-codes.js';
import { ServerClock } from './server-clock.js';
import { whenRefused, type Refusal, type SocketConstructor, type SocketLike } from './socket-like.js';

export type { SocketConstructor, SocketLike } from './socket-like.js';

export { CLOSE, CLOSE_ACTION, FRAME_LIMITS, LIVE_SUBPROTOCOL } from '../schemas/live-protocol.js';
export type { CloseCode } from '../schemas/live-protocol.js';
export type { ActionFrame, Control, ControlType, CrowdCue, CrowdFrame, LightFrame, PageFrame, XYPadValue } from '../schemas/live-types.js';
export { displayedRgb, FlashGuard, luminanceOf, MAX_FLASHES_PER_SECOND, shownAt, type Shown, type TimedLook } from '../schemas/light.js';


/** The live page: the layout's active page and its controls, as GET /layout has them. */
export type Page = Omit<PageFrame, 'op'>;
/** A crowd value of an aggregated control on the live page. */
export type CrowdValue = Omit<CrowdFrame, 'op'>;
/** A light look for this phone's zone (or every zone), from `at` on the server's clock (light-look.schema.json). */
export type Light = Omit<LightFrame, 'op'>;
/** Where the phone sits in its zone (its token's seat claim), 0 to 1 each way. */
export interface Seat {
  x: number;
  y: number;
}

/** The seat claim of an audience token (a JWT: its payload is read, not checked; the gateway checks it), or null. */
export function seatOf(token: string): Seat | null {
  try {
    const part = token.split('.')[1] ?? '';
    const json = atob(part.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(part.length / 4) * 4, '='));
    const seat = (JSON.parse(json) as { seat?: unknown }).seat as Partial<Seat> | undefined;
    return typeof seat?.x === 'number' && typeof seat.y === 'number' ? { x: seat.x, y: seat.y } : null;
  } catch {
    return null;
  }
}
type WithoutFrameFields<T> = T extends unknown ? Omit<T, 'op' | 'ref' | 'idempotencyKey' | 'layoutId'> : never;
/** An action, its value typed by the control's type: a Slider's a number, a Toggle's a boolean, an XYPad's [x, y]. */
export type Action = WithoutFrameFields<ActionFrame>;

/**
 * Why a send failed: the gateway's error code (the HTTP API's: invalid_value, rate_limited, ...;
 * a code this client does not know, from a newer gateway, is `internal` with the gateway's
 * message), `timeout` (no answer in time: it may have been stored), or the client's state when it
 * stopped or lost its token.
 */
export type LiveErrorCode = ErrorCode | 'timeout' | 'stopped' | 'unauthorized';
export type { ErrorCode };

/** A refused action, a timeout, or a client that stopped. */
export class LiveError extends Error {
  constructor(
    readonly code: LiveErrorCode,
    message: string,
    readonly retryAfterMs?: number,
    /** the action's idempotency key: send it again with this key to learn whether it was stored, without storing it twice */
    readonly idempotencyKey?: string,
  ) {
    super(message);
    this.name = 'LiveError';
  }
}

/**
 * connecting: opening a socket; open: live; waiting: closed, reconnecting after a delay (or
 * renewing the token); offline: the browser says it has no network (it connects again at its
 * `online`); unauthorized: the token is no longer valid and could not be renewed (no callback, or
 * it failed too often): nothing is retried until `resume`; stopped: for good.
 */
export type State = 'connecting' | 'open' | 'waiting' | 'offline' | 'unauthorized' | 'stopped';

export interface LiveClientOptions {
  /** the gateway's live channel, e.g. wss://gateway.example/live */
  url: string;
  /** the audience token its backend minted */
  token: string;
  /**
   * Asked for a new token of the same participant (the app's backend calls POST /token with
   * `renew`): before the token expires (`expiring`), on close CLOSE.tokenInvalid or CLOSE.tokenExpired, and after two failed
   * opens in a row. Without it the client stops as `unauthorized` where it would need one.
   */
  refreshToken?: () => Promise<string>;
  /** the WebSocket to use (default: the global one) */
  WebSocket?: SocketConstructor;
  /** how long send() waits for the ack, reconnects included (default 10 s) */
  ackTimeoutMs?: number;
  /** reconnect delays: full jitter up to min(maxDelayMs, baseDelayMs * 2^attempt) (defaults 250 ms, 30 s) */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** refreshToken failures in a row after which the client stops as `unauthorized` (default 5) */
  maxRefreshFailures?: number;
  /** without refreshToken: failed opens in a row after which the client stops as `unauthorized` (default 10; about 2 minutes of backoff) */
  maxFailedOpens?: number;
  /** a socket that has heard nothing this long sends a ping (default FRAME_LIMITS.heartbeatIdleMs, 1 s) */
  heartbeatIdleMs?: number;
  /** a socket that sent a ping or an action and has heard nothing this long since is dead: the client reconnects (default FRAME_LIMITS.heartbeatDeadMs, 1 s) */
  heartbeatDeadMs?: number;
  /** for tests: the randomness of the jitter */
  random?: () => number;
}

/** How often an open socket's heartbeat is looked at. */
const HEARTBEAT_TICK_MS = 100;
/** Clock exchanges a new socket makes one after another, and how often an open one makes one more (within FRAME_LIMITS.time). */
const TIME_EXCHANGES_AT_OPEN = 4;
const TIME_EXCHANGE_EVERY_MS = 10_000;

type Listener = (type: string, listener: () => void) => void;
const windowish = globalThis as { addEventListener?: Listener; removeEventListener?: Listener; navigator?: { onLine?: boolean } };
/** Whether the platform says it is offline (a browser's navigator.onLine; never elsewhere). */
const saysOffline = () => windowish.navigator?.onLine === false;

/** The delay before reconnect attempt `attempt` (0-based): full jitter, uniform in [0, min(max, base * 2^attempt)). */
export function reconnectDelay(attempt: number, baseMs: number, maxMs: number, random: () => number): number {
  return Math.floor(random() * Math.min(maxMs, baseMs * 2 ** attempt));
}

/** A client kept past its budget (CLOSE.flooding) waits at least this long before it reconnects. */
export const FLOOD_PAUSE_MS = 5000;
/** Opens that fail in a row (closed before open) after which the token is renewed. */
const FAILED_OPENS_BEFORE_RENEWAL = 2;

interface Pending {
  frame: string;
  /** the action, and when it was first sent: once acked, the latest value of its control */
  action: Action;
  sentAt: number;
  resolve: (answer: { held: boolean }) => void;
  reject: (e: LiveError) => void;
  timer: ReturnType<typeof setTimeout>;
}

export interface LiveEvents {
  page: Page;
  crowd: CrowdValue;
  /** a light look for this phone (its zone's, or every zone's): show it from its `at` on serverNow() */
  light: Light;
  state: State;
  closed: { code: number; reason: string };
  /** the token could not be renewed: the client is `unauthorized` (or `stopped`) */
  unauthorized: { code: number; reason: string };
  /** the socket took the renewed token (`refresh` answered): it now expires at `expiresAt` (ms since the epoch) */
  refreshed: { expiresAt: number };
  /** the client will try again at `nextAttemptAt` (ms since the epoch), after `lastClose` */
  waiting: { nextAttemptAt: number; lastClose: { code: number; reason: string } | null };
}

export class LiveClient {
  /** the live page, once the gateway sent it */
  page: Page | null = null;
  /** the crowd's values on the live page, by lid */
  readonly crowd = new Map<number, CrowdValue>();
  /** the newest light look the gateway sent this phone (its zone's current one once a socket opens), or null */
  light: Light | null = null;
  state: State = 'connecting';
  /** While `waiting`: when the next attempt to connect is due (ms since the epoch), else null. */
  nextAttemptAt: number | null = null;
  /** The last close, with its code (what a page tells its audience: the show ended, access ended, no network...). */
  lastClose: { code: number; reason: string } | null = null;
  private socket: SocketLike | null = null;
  private token: string;
  private attempt = 0;
  /** a socket dropped right after its open was retried at once; until a page comes, the next one waits out the backoff */
  private retriedDropAtOpen = false;
  private failedOpens = 0;
  private refreshFailures = 0;
  /** the app's refreshToken callback under way */
  private renewal: Promise<string | null> | null = null;
  private retry: ReturnType<typeof setTimeout> | null = null;
  private readonly pending = new Map<string, Pending>();
  /** by lid: the latest acked value of each aggregated control of the live page, and when it was sent (restated after a reconnect) */
  private readonly latest = new Map<number, { action: Action; sentAt: number }>();
  private readonly listeners = new Map<keyof LiveEvents, Set<(v: never) => void>>();
  private refs = 0;
  /** the open socket's heartbeat: when it last heard a frame, since when a frame it sent is unanswered (null: none), the timer */
  private heardAt = 0;
  private unansweredSince: number | null = null;
  /** the heartbeat found the deadline passed once: frames that came meanwhile are read before the next beat judges */
  private overdue = false;
  private heartbeat: ReturnType<typeof setInterval> | null = null;
  private readonly clock = new ServerClock();
  /** the clock exchanges in flight: ref -> when sent (the clock's ms) */
  private readonly timeSent = new Map<string, number>();
  private timeExchangesLeft = 0;
  private timeSentAt = -Infinity;
  private readonly o: Required<Omit<LiveClientOptions, 'refreshToken'>> & Pick<LiveClientOptions, 'refreshToken'>;

  constructor(options: LiveClientOptions) {
    const WS = options.WebSocket ?? (globalThis as { WebSocket?: SocketConstructor }).WebSocket;
    if (!WS) throw new Error('no WebSocket: pass options.WebSocket (in Node, the ws package)');
    this.o = {
      ackTimeoutMs: 10_000, baseDelayMs: 250, maxDelayMs: 30_000, maxRefreshFailures: 5, maxFailedOpens: 10,
      heartbeatIdleMs: FRAME_LIMITS.heartbeatIdleMs, heartbeatDeadMs: FRAME_LIMITS.heartbeatDeadMs, random: Math.random, ...options, WebSocket: WS,
    };
    this.token = options.token;
    this.listen(true);
    this.open();
  }

  /**
   * Listens to an event; returns the function that stops listening. A listener of `page`, `crowd`
   * or `light` added after they came gets the current page, crowd values and look at once (in a microtask).
   */
  on<K extends keyof LiveEvents>(event: K, listener: (value: LiveEvents[K]) => void): () => void {
    let set = this.listeners.get(event);
    if (!set) this.listeners.set(event, (set = new Set()));
    set.add(listener);
    const replay: LiveEvents[K][] = event === 'page' ? (this.page ? [this.page as LiveEvents[K]] : []) : event === 'crowd' ? ([...this.crowd.values()] as LiveEvents[K][]) : event === 'light' ? (this.light ? [this.light as LiveEvents[K]] : []) : [];
    if (replay.length > 0) queueMicrotask(() => replay.forEach((v) => set.has(listener) && listener(v)));
    return () => set.delete(listener);
  }

  private emit<K extends keyof LiveEvents>(event: K, value: LiveEvents[K]): void {
    for (const l of this.listeners.get(event) ?? []) (l as (v: LiveEvents[K]) => void)(value);
  }

  private setState(state: State): void {
    if (this.state === state) return;
    this.state = state;
    this.emit('state', state);
  }

  /**
   * Sends an action; resolves once the gateway stored it (its ack; `held`: a String of a control in
   * moderation mode hold waits for a moderator, so the app can say "your message will be
   * reviewed"), rejects with a LiveError
   * (the API's code, or `timeout`). An idempotency key goes with it (a new one, or the one given),
   * so the resends after a reconnect are stored once; a `timeout` carries it, so that the app can
   * send the action again with it and learn the truth: an action stored already is acked, not
   * stored twice (within IDEMPOTENCY_TTL_SECONDS).
   */
  send(action: Action, options: { idempotencyKey?: string } = {}): Promise<{ held: boolean }> {
    if (this.state === 'stopped' || this.state === 'unauthorized') return Promise.reject(new LiveError(this.state, `The client is ${this.state}.`));
    const ref = `${++this.refs}`;
    const idempotencyKey = options.idempotencyKey ?? randomKey();
    const frame = JSON.stringify({ op: CLIENT_OP.action, ref, ...action, idempotencyKey });
    return new Promise<{ held: boolean }>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(ref);
        reject(new LiveError('timeout', `No answer within ${this.o.ackTimeoutMs} ms; it may have been stored: send it again with its idempotencyKey to know.`, undefined, idempotencyKey));
        // An open socket that answers nothing is a dead link (half-open): reconnect now. One that
        // heard something lately is not: it may have opened a moment ago, the action's resend on its way.
        if (Date.now() - this.heardAt >= this.o.heartbeatDeadMs) this.abandon();
      }, this.o.ackTimeoutMs);
      this.pending.set(ref, { frame, action, sentAt: Date.now(), resolve, reject, timer });
      this.write(frame);
    });
  }

  /** Closes the socket for good; pending sends are rejected. */
  stop(): void {
    this.halt('stopped');
  }

  /** After `unauthorized` (or `stopped`): connects again, with a new token if one is given. */
  resume(token?: string): void {
    if (this.state !== 'unauthorized' && this.state !== 'stopped') return;
    if (token !== undefined) this.token = token;
    if (this.state === 'stopped') this.listen(true);
    this.attempt = 0;
    this.failedOpens = 0;
    this.refreshFailures = 0;
    this.open();
  }

  private halt(state: 'stopped' | 'unauthorized'): void {
    this.setState(state);
    if (state === 'stopped') this.listen(false);
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    const socket = this.socket;
    this.socket = null;
    this.stopHeartbeat();
    socket?.close(1000, 'done');
    for (const [ref, p] of this.pending) {
      clearTimeout(p.timer);
      this.pending.delete(ref);
      p.reject(new LiveError(state, `The client is ${state}.`));
    }
  }

  /**
   * Leaves an open socket that stopped answering (its link vanished without a close): a close
   * handshake would wait on the dead link, so its handlers are dropped and the client reconnects
   * at once, as after a close 1006.
   */
  private abandon(): void {
    if (this.socket?.readyState !== 1 || !this.drop()) return; // one still connecting is left to its open
    this.closed(1006, 'no answer');
  }

  /** Drops the socket, open or connecting, without waiting for a close handshake (a dead link would not carry it); false when there was none. */
  private drop(): boolean {
    const socket = this.socket;
    this.stopHeartbeat();
    if (!socket || (socket.readyState !== 0 && socket.readyState !== 1)) return false;
    this.socket = null;
    socket.onclose = socket.onmessage = socket.onopen = null;
    socket.onerror = () => {}; // closing one still connecting is an error to ws; nothing to do about it
    socket.close(1000, 'no answer');
    return true;
  }

  /** The gateway's clock now (ms since the epoch, the deployment's timebase); this device's until a clock exchange was answered. */
  serverNow(): number {
    return this.clock.now();
  }

  /** serverNow() is right within this many ms (half the least round trip of the last minute's exchanges); Infinity before the first. */
  clockUncertaintyMs(): number {
    return this.clock.uncertaintyMs();
  }

  /** Where this phone sits in its zone: its token's seat claim (a wave reaches it by it), or null. */
  get seat(): Seat | null {
    return seatOf(this.token);
  }

  /** One clock exchange on the open socket. */
  private exchangeTime(): void {
    if (this.socket?.readyState !== 1) return;
    const ref = `t${++this.refs}`;
    this.timeSentAt = this.clock.local();
    this.timeSent.set(ref, this.timeSentAt);
    // each exchange says how well the last ones placed this phone's clock: the gateway's sync figures
    const u = this.clock.uncertaintyMs();
    this.write(JSON.stringify({ op: CLIENT_OP.time, ref, ...(Number.isFinite(u) && { uncertaintyMs: Math.round(u * 10) / 10 }) }));
  }

  /** A clock exchange answered (or refused: then its ref is only forgotten); the next of the open socket's first few follows. */
  private timeAnswered(ref: string, answer: { receivedAt?: unknown; sentAt?: unknown } | null): void {
    const t3 = this.clock.local();
    const t0 = this.timeSent.get(ref);
    if (t0 === undefined) return;
    this.timeSent.delete(ref);
    if (answer && typeof answer.receivedAt === 'number' && typeof answer.sentAt === 'number') this.clock.add(t0, answer.receivedAt, answer.sentAt, t3);
    if (this.timeExchangesLeft === 0) return;
    this.timeExchangesLeft--;
    this.exchangeTime();
  }

  /** Sends a frame on the open socket, if there is one: the heartbeat then waits for something to come back. */
  private write(frame: string): void {
    if (this.socket?.readyState !== 1) return;
    this.socket.send(frame);
    this.unansweredSince ??= Date.now();
  }

  /** The open socket's heartbeat: a quiet socket pings; one that heard nothing back in time is dead. */
  private beat(): void {
    const now = Date.now();
    if (this.unansweredSince !== null && now - this.unansweredSince >= this.o.heartbeatDeadMs) {
      // A page stalled past the deadline (a long task, a GC, a throttled tab) runs its timers before
      // the frames that came meanwhile: the socket is judged on the next beat, once they are read.
      if (this.overdue) return this.abandon();
      this.overdue = true;
      return;
    }
    if (this.unansweredSince === null && now - this.heardAt >= this.o.heartbeatIdleMs) this.write(JSON.stringify({ op: CLIENT_OP.ping }));
    if (this.timeSent.size === 0 && this.clock.local() - this.timeSentAt >= TIME_EXCHANGE_EVERY_MS) this.exchangeTime();
  }

  private stopHeartbeat(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }

  private listen(on: boolean): void {
    const f = on ? windowish.addEventListener : windowish.removeEventListener;
    f?.call(globalThis, 'online', this.online);
    f?.call(globalThis, 'offline', this.offline);
  }

  /** The device is back online (a browser's `online` event): a client offline or waiting to reconnect does so now. */
  private readonly online = () => {
    if (this.state === 'offline') {
      this.attempt = 0;
      return this.open();
    }
    if (this.state !== 'waiting' || !this.retry || this.renewal) return;
    clearTimeout(this.retry);
    this.retry = null;
    this.attempt = 0;
    this.open();
  };

  /** The device went offline (a browser's `offline` event): the socket is left, and the client waits for `online`. */
  private readonly offline = () => {
    if (this.state === 'stopped' || this.state === 'unauthorized') return;
    this.drop();
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    this.nextAttemptAt = null;
    this.setState('offline');
  };

  private open(): void {
    this.nextAttemptAt = null;
    if (saysOffline()) return this.setState('offline'); // the `online` event opens it
    this.setState('connecting');
    let opened = false;
    let heard = false;
    const socket = new this.o.WebSocket(this.o.url, liveSubprotocols(this.token));
    this.socket = socket;
    socket.onopen = () => {
      opened = true;
      this.failedOpens = 0;
      this.heardAt = Date.now();
      this.unansweredSince = null;
      this.overdue = false;
      this.stopHeartbeat();
      this.heartbeat = setInterval(() => this.beat(), HEARTBEAT_TICK_MS);
      this.setState('open');
      this.timeSent.clear();
      this.timeExchangesLeft = TIME_EXCHANGES_AT_OPEN - 1;
      this.exchangeTime();
      this.restate();
      for (const p of this.pending.values()) this.write(p.frame); // resends keep their idempotency keys
    };
    socket.onmessage = (event: { data: unknown }) => {
      heard = true;
      this.received(String(event.data));
    };
    socket.onerror = () => {}; // a close follows
    let refused: Refusal | null = null;
    whenRefused(socket, (r) => (refused = r));
    socket.onclose = (event: { code: number; reason: string }) => {
      if (this.socket !== socket) return; // closed by us (stop, halt): already handled
      this.socket = null;
      this.stopHeartbeat();
      if (!opened) this.failedOpens++;
      // Opened, then closed 1006 before its first frame: the link and the gateway answered, and the
      // socket was lost at the upgrade (uWS drops one now and then: docs/live.md). It is tried again
      // at once, not after the backoff of the outage before it; once until a page comes.
      if (opened && !heard && event.code === 1006 && !this.retriedDropAtOpen) {
        this.retriedDropAtOpen = true;
        this.attempt = 0;
      }
      this.closed(event.code, event.reason, refused);
    };
  }

  private received(text: string): void {
    this.heardAt = Date.now();
    this.unansweredSince = null;
    this.overdue = false;
    let frame: { op?: string; ref?: string | null; expiresAt?: number; error?: { code: string; message: string; retryAfterMs?: number } } & Record<string, unknown>;
    try {
      frame = JSON.parse(text) as typeof frame;
    } catch {
      return;
    }
    switch (frame.op) {
      case SERVER_OP.page: {
        const { op: _, ...page } = frame as unknown as PageFrame;
        if (this.page && page.version < this.page.version) return; // an older one overtaken
        this.attempt = 0; // a page: the connection works
        this.retriedDropAtOpen = false;
        this.refreshFailures = 0;
        this.page = page;
        const onPage = new Set(page.controls.map((c: Control) => c.lid));
        for (const lid of this.crowd.keys()) if (!onPage.has(lid)) this.crowd.delete(lid);
        for (const lid of this.latest.keys()) if (!onPage.has(lid)) this.latest.delete(lid);
        return this.emit('page', page);
      }
      case SERVER_OP.crowd: {
        const { op: _, ...value } = frame as unknown as CrowdFrame;
        this.crowd.set(value.lid, value);
        return this.emit('crowd', value);
      }
      case SERVER_OP.light: {
        const { op: _, ...look } = frame as unknown as LightFrame;
        this.light = look;
        return this.emit('light', look);
      }
      case SERVER_OP.expiring:
        return void this.renew(null);
      case SERVER_OP.refreshed:
        return this.emit('refreshed', { expiresAt: Number(frame.expiresAt) });
      case SERVER_OP.time:
        return typeof frame.ref === 'string' ? this.timeAnswered(frame.ref, { receivedAt: frame.receivedAt, sentAt: frame.sentAt }) : undefined;
      case SERVER_OP.ack:
      case SERVER_OP.error: {
        if (typeof frame.ref !== 'string') return; // a refused refresh: the socket keeps its token until CLOSE.tokenExpired
        if (this.timeSent.has(frame.ref)) return this.timeAnswered(frame.ref, null); // a clock exchange past the socket's budget
        const p = this.pending.get(frame.ref);
        if (!p) return;
        this.pending.delete(frame.ref);
        clearTimeout(p.timer);
        if (frame.op === SERVER_OP.ack) {
          this.acked(p);
          p.resolve({ held: frame.held === true });
        }
        else {
          const code = frame.error?.code;
          p.reject(new LiveError(code !== undefined && isErrorCode(code) ? code : 'internal', frame.error?.message ?? 'refused', frame.error?.retryAfterMs));
        }
      }
    }
  }

  /** An acked action of an aggregated control (not a Button's press): the control's latest value, restated after a reconnect. */
  private acked(p: Pending): void {
    const aggregate = this.page?.controls.find((c) => c.lid === p.action.lid)?.aggregate;
    if (!aggregate || aggregate.mode === 'rate') return;
    const was = this.latest.get(p.action.lid);
    if (was && was.sentAt > p.sentAt) return; // a newer one was acked first
    this.latest.delete(p.action.lid); // newest last
    this.latest.set(p.action.lid, { action: p.action, sentAt: p.sentAt });
  }

  /**
   * After a reconnect: the latest acked values, with their age, so that a gateway that holds none
   * of them (the one that did was lost, and its values with it) counts this participant again at
   * once. A gateway that holds a value of the control keeps it; the ack is not waited for.
   */
  private restate(): void {
    const now = Date.now();
    const values = [...this.latest.values()]
      .filter((l) => now - l.sentAt <= FRAME_LIMITS.restateMaxAgeMs)
      .slice(-FRAME_LIMITS.restateMaxValues)
      .map((l) => ({ lid: l.action.lid, type: l.action.type, value: l.action.value, ageMs: Math.max(0, now - l.sentAt) }));
    if (values.length > 0) this.write(JSON.stringify({ op: CLIENT_OP.restate, ref: `${++this.refs}`, values }));
  }

  /** A new token from the app's callback, one call at a time: null when it failed. */
  private newToken(refreshToken: () => Promise<string>): Promise<string | null> {
    this.renewal ??= refreshToken()
      .then(
        (token) => {
          this.refreshFailures = 0;
          this.token = token;
          return token;
        },
        () => {
          this.refreshFailures++;
          return null;
        },
      )
      .finally(() => (this.renewal = null));
    return this.renewal;
  }

  /**
   * Renews the token through the app's callback. With an open socket (`expiring`) the new token
   * goes as `refresh`; after a close (`closedBy`) the client reconnects with it. No callback, or
   * maxRefreshFailures failures in a row, and the client is `unauthorized`.
   */
  private async renew(closedBy: { code: number; reason: string } | null): Promise<void> {
    if (!this.o.refreshToken) {
      if (closedBy) this.unauthorized(closedBy);
      return; // an open socket without a callback lives until CLOSE.tokenExpired
    }
    const token = await this.newToken(this.o.refreshToken);
    if (this.state === 'stopped' || this.state === 'unauthorized') return;
    if (token === null && this.refreshFailures >= this.o.maxRefreshFailures) return this.unauthorized(closedBy ?? { code: 0, reason: 'the token could not be renewed' });
    if (closedBy) return this.schedule(0); // with the new token, or the old one after a failure (the next failed opens ask again)
    if (token !== null) this.write(JSON.stringify({ op: CLIENT_OP.refresh, token }));
  }

  private unauthorized(closedBy: { code: number; reason: string }): void {
    this.halt('unauthorized');
    this.emit('unauthorized', closedBy);
  }

  /** What the close code says to do: stop, renew the token, or reconnect after a jittered delay. */
  private closed(code: number, reason: string, refused: Refusal | null = null): void {
    const closedBy = { code, reason };
    this.lastClose = closedBy;
    this.emit('closed', closedBy);
    if (this.state === 'stopped' || this.state === 'unauthorized') return;
    const action = CLOSE_ACTION[code as CloseCode] as (typeof CLOSE_ACTION)[CloseCode] | undefined;
    if (action === 'stop' || refused?.status === 404) return this.halt('stopped'); // the layout is gone, or a newer socket of this participant took this one's place
    this.setState('waiting');
    if (action === 'renew' || refused?.status === 401) return void this.renew(refused ? { code: refused.status, reason: 'the upgrade was refused' } : closedBy);
    if (refused?.retryAfterMs !== undefined) return this.schedule(refused.retryAfterMs); // 429, 503: as the gateway says
    if (this.failedOpens > 0 && this.failedOpens % FAILED_OPENS_BEFORE_RENEWAL === 0 && this.o.refreshToken) return void this.renew(closedBy);
    if (!this.o.refreshToken && this.failedOpens >= this.o.maxFailedOpens) return this.unauthorized(closedBy); // a 401 or a long outage: it cannot tell, so it stops
    if (action === 'reconnect-later') return this.schedule(FLOOD_PAUSE_MS);
    this.schedule(code === CLOSE.serviceRestart ? (retryAfterOf(reason) ?? 0) : 0);
  }

  /** Reconnects after `afterMs` plus a full-jitter backoff delay. */
  private schedule(afterMs: number): void {
    if (this.state === 'stopped' || this.state === 'unauthorized') return;
    const delay = afterMs + reconnectDelay(this.attempt++, this.o.baseDelayMs, this.o.maxDelayMs, this.o.random);
    this.nextAttemptAt = Date.now() + delay;
    this.retry = setTimeout(() => this.open(), delay);
    this.setState('waiting');
    this.emit('waiting', { nextAttemptAt: this.nextAttemptAt, lastClose: this.lastClose });
  }
}

/** 16 random hex characters (an idempotency key). */
function randomKey(): string {
  const bytes = new Uint8Array(8);
  globalThis.crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}
