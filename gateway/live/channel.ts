// The live channel: GET /live upgrades to a WebSocket on which a phone sees what is live and acts.
// The client offers two subprotocols, `audience-control.v1` and `bearer.<audience token>` (a
// browser's WebSocket cannot send headers, and a token in the URL would land in access logs); the
// server selects `audience-control.v1`. The server sends the layout's active page first and again
// after every page switch or re-import, and the crowd's value of each aggregated control on the
// page as it changes (at most 4 times a second); the client sends actions, each answered by an ack
// once stored (the moment POST /action answers 200) or an error with the HTTP API's codes. Actions
// take the same intake as POST /action, so one participant has one budget whichever way it acts.
// Page and crowd frames are latest-value state: a socket that cannot keep up is skipped, then sent
// the current state when it drains, and closed with 4008 if it stays behind.
import type { HttpRequest, HttpResponse, TemplatedApp, us_socket_context_t } from 'uWebSockets.js';
import { WHOLE_DOCUMENT, describeFirstError, validateLiveActionFrame } from '../../schemas/validators.js';
import type { ActionIntake } from '../actions/intake.js';
import type { CrowdValue } from '../../schemas/crowd-merge.js';
import { revokedByLayout, type AudienceClaims } from '../auth/audience-tokens.js';
import { AppError, ERRORS } from '../errors.js';
import { errorReply, internalError, send } from '../http/reply.js';
import { requestId } from '../http/server.js';
import type { LiveLayout } from '../layouts/layout-cache.js';
import { TokenBuckets } from '../limits/token-buckets.js';
import type { RouteDeps } from '../routes/deps.js';
import type { CrowdFeed } from './crowd-feed.js';
import { CLOSE, PROTOCOL, crowdFrame, crowdLids, errorFrame, offeredProtocols, pageFrame } from './frames.js';
import { FrameAnswer, type LiveOptions, type LiveSocket, type SocketData } from './socket.js';

export type { LiveOptions } from './socket.js';

export { CLOSE, PROTOCOL } from './frames.js';

/** A socket whose actions were refused as rate_limited this many times in a row is closed (4029). */
export const FLOOD_CLOSE_AFTER = 50;

/** Answers may fill a socket's buffer to this many times LIVE_BUFFER_BYTES (1 MiB by default). */
const ANSWER_BUFFER_FACTOR = 64;
/** uWS's answer to a send dropped past maxBackpressure. */
const DROPPED = 2;

/** A stopping gateway closes its sockets over this long, so their reconnects are spread too. */
export const CLOSE_SPREAD_MS = 1000;

const decoder = new TextDecoder('utf-8', { fatal: true });

export class LiveChannel {
  /** the open sockets, by layout */
  private readonly byLayout = new Map<string, Set<LiveSocket>>();
  /** the upgrades accepted lately (one bucket: this process's) */
  private readonly upgrades = new TokenBuckets(1);
  /** sockets open now (an upgrade under way is not counted yet, so a burst may pass the cap by a few) */
  private held = 0;
  /** the sockets whose state frames are being skipped, and the timer that closes those behind too long */
  private readonly behind = new Set<LiveSocket>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly d: RouteDeps,
    private readonly intake: ActionIntake,
    /** the crowd's values, merged over every gateway process (null: no crowd frames) */
    private readonly crowd: CrowdFeed | null,
    private readonly o: LiveOptions,
  ) {
    this.sweeper = setInterval(() => this.sweep(), Math.min(1000, o.slowCloseMs / 4));
    this.sweeper.unref();
  }

  /** Sockets open on this process now. */
  get sockets(): number {
    return this.held;
  }

  mount(app: TemplatedApp): void {
    app.ws<SocketData>('/live', {
      maxPayloadLength: this.o.maxFrameBytes,
      idleTimeout: 60,
      sendPingsAutomatically: true,
      // answers (ack, error) pass the state frames' limit, behind a large page on a slow network too:
      // past this uWS drops a send, and the socket is closed (4008)
      maxBackpressure: ANSWER_BUFFER_FACTOR * this.o.bufferBytes,
      closeOnBackpressureLimit: false,
      drain: (ws) => this.drained(ws),
      upgrade: (res, req, context) => this.upgrade(res, req, context),
      open: (ws) => this.opened(ws),
      message: (ws, message, isBinary) => this.received(ws, message, isBinary),
      close: (ws, code) => this.closed(ws, code),
    });
  }

  /** The Origin (as CORS for POST /action), the subprotocols, the token and its layout, checked before the upgrade. */
  private upgrade(res: HttpResponse, req: HttpRequest, context: us_socket_context_t): void {
    const key = req.getHeader('sec-websocket-key');
    const offered = offeredProtocols(req.getHeader('sec-websocket-protocol'));
    const extensions = req.getHeader('sec-websocket-extensions');
    const origin = req.getHeader('origin');
    let aborted = false;
    res.onAborted(() => (aborted = true));
    const refuse = (e: unknown) => {
      if (aborted) return;
      if (!(e instanceof AppError)) this.o.onError(e);
      send(res, requestId(), errorReply(e instanceof AppError ? e : internalError()), []); // the API's error answer, as any route's
    };
    /** `now`: still inside this handler, where uWS has the response corked */
    const accept = (claims: AudienceClaims, layout: LiveLayout | null, now: boolean) => {
      if (!layout || layout.teamId !== claims.team) throw new AppError('layout_not_found');
      if (revokedByLayout(claims, layout)) throw new AppError('token_revoked');
      if (aborted) return;
      const upgrade = () => res.upgrade<SocketData>({ claims, layoutId: layout.layoutId, version: -1, open: true, refusedInARow: 0, overSince: null, stale: false, openedAt: this.o.now() }, key, PROTOCOL, extensions, context);
      if (now) upgrade();
      else res.cork(upgrade);
    };
    try {
      // before anything else is spent on it: a storm of reconnects is refused at the door
      if (this.held >= this.o.maxSockets) throw new AppError('unavailable', 'This gateway holds as many live sockets as it may; connect again (to another gateway).', undefined, [['retry-after', '1']]);
      if (this.upgrades.take('upgrades', { ratePerSecond: this.o.newSocketsPerSecond, burst: this.o.newSocketsPerSecond }, this.o.now()) > 0) {
        throw new AppError('unavailable', 'Too many new live sockets this second; connect again shortly.', undefined, [['retry-after', '1']]);
      }
      if (origin !== '' && !this.d.cors.allows(origin)) throw new AppError('origin_not_allowed');
      if (!offered.protocol) throw new AppError('protocol_missing');
      if (offered.token === '') throw new AppError('token_missing', 'Offer the audience token as the subprotocol bearer.<token>, beside audience-control.v1.');
      // A token verified before and a cached layout (a reconnect) upgrade at once, inside this
      // handler. Otherwise the upgrade completes after the await, in res.cork: there uWS (v20.51)
      // now and then closes the new socket right after it opens (uNetworking/uWebSockets#1928,
      // about 1 in 400 here); it is counted, and clients reconnect.
      const verified = this.d.tokens.verify(offered.token);
      const layout = verified instanceof Promise ? null : this.d.layouts.get(verified.layoutId);
      if (!(verified instanceof Promise) && !(layout instanceof Promise)) return accept(verified, layout, true);
      void Promise.resolve(verified)
        .then(async (claims) => accept(claims, await this.d.layouts.get(claims.layoutId), false))
        .catch(refuse);
    } catch (e) {
      refuse(e);
    }
  }

  private opened(ws: LiveSocket): void {
    this.held++;
    const data = ws.getUserData();
    let set = this.byLayout.get(data.layoutId);
    if (!set) {
      this.byLayout.set(data.layoutId, (set = new Set()));
      this.crowd?.watch(data.layoutId); // the first socket on the layout here: its crowd is listened to
    }
    set.add(ws);
    // Not from inside this handler: it runs within the upgrade's cork, and a send from a promise
    // settled here (a cached layout) raced the upgrade and lost the socket (1006).
    setImmediate(() => void this.sendPage(ws, true));
  }

  private closed(ws: LiveSocket, code: number): void {
    this.held--;
    const data = ws.getUserData();
    // closed by uWS right after an asynchronous upgrade (see upgrade), before its page went out
    if (code === 1006 && data.open && data.version === -1 && this.o.now() - data.openedAt < 100) this.o.onLostAtUpgrade?.();
    data.open = false;
    const set = this.byLayout.get(data.layoutId);
    this.behind.delete(ws);
    set?.delete(ws);
    if (set?.size === 0) {
      this.byLayout.delete(data.layoutId);
      this.crowd?.unwatch(data.layoutId);
    }
  }

  /**
   * Sends a state frame (page, crowd) unless the socket is over its buffer: then it is skipped, and
   * the socket gets the current state when it drains. Returns whether it went out.
   */
  private sendState(ws: LiveSocket, data: SocketData, text: string): boolean {
    if (data.overSince !== null) {
      data.stale = true;
      this.o.onSkipped?.();
      return false;
    }
    ws.send(text);
    if (ws.getBufferedAmount() > this.o.bufferBytes) {
      data.overSince = this.o.now();
      this.behind.add(ws);
    }
    return true;
  }

  /** A socket's buffer drained: one back under its limit that skipped state gets the current page and crowd. */
  private drained(ws: LiveSocket): void {
    const data = ws.getUserData();
    if (data.overSince === null || ws.getBufferedAmount() > this.o.bufferBytes) return;
    data.overSince = null;
    this.behind.delete(ws);
    if (!data.stale) return;
    data.stale = false;
    data.version = -1; // the page it last got may be old: send it again with the crowd
    void this.sendPage(ws, true);
  }

  /** Closes the sockets that stayed behind for slowCloseMs with 4008. */
  private sweep(): void {
    const now = this.o.now();
    for (const ws of this.behind) {
      const since = ws.getUserData().overSince;
      if (since !== null && now - since >= this.o.slowCloseMs) {
        this.behind.delete(ws);
        this.end(ws, CLOSE.tooSlow, 'too slow to read');
      }
    }
  }

  /**
   * The layout's active page, as GET /layout answers it, with its version (nothing when it did not
   * change for this socket), then the crowd's values on it (always with `withCrowd`).
   */
  private async sendPage(ws: LiveSocket, withCrowd = false): Promise<void> {
    const data = ws.getUserData();
    if (!data.open) return;
    try {
      const layout = await this.d.layouts.get(data.layoutId);
      if (!data.open) return;
      if (!layout) return this.end(ws, CLOSE.layoutGone, 'the layout is gone');
      if (layout.version === data.version) return;
      const destinationCount = await this.d.destinations.count(data.layoutId).catch(() => {
        this.o.onUnavailable('live_destination_count');
        return 0; // the page still goes out: the count is a hint
      });
      if (!data.open || layout.version === data.version) return; // another call sent it meanwhile
      if (!this.sendState(ws, data, pageFrame(layout, destinationCount))) return;
      const changedPage = data.version !== -1;
      data.version = layout.version;
      if (!withCrowd && !changedPage) return;
      const lids = crowdLids(layout);
      ws.cork(() => {
        for (const v of this.crowd?.current(data.layoutId) ?? []) if (lids.has(v.lid) && !this.sendState(ws, data, crowdFrame(v))) return;
      });
    } catch (e) {
      if (e instanceof AppError) this.o.onUnavailable('live_page');
      else this.o.onError(e);
    }
  }

  private received(ws: LiveSocket, message: ArrayBuffer, isBinary: boolean): void {
    const data = ws.getUserData();
    let frame: unknown;
    try {
      if (isBinary) throw new AppError('invalid_json', 'Frames are JSON text.');
      frame = JSON.parse(decoder.decode(message));
    } catch (e) {
      return this.answer(ws, errorFrame(null, e instanceof AppError ? e : new AppError('invalid_json')));
    }
    const ref = typeof (frame as { ref?: unknown } | null)?.ref === 'string' ? ((frame as { ref: string }).ref.slice(0, 64) || null) : null;
    try {
      if (!validateLiveActionFrame(frame, WHOLE_DOCUMENT)) throw new AppError('invalid_body', describeFirstError(validateLiveActionFrame.errors, 'frame'));
      if (frame.layoutId !== undefined && frame.layoutId !== data.claims.layoutId) throw new AppError('token_layout_mismatch');
      const body = { layoutId: data.claims.layoutId, lid: frame.lid, type: frame.type, ...(frame.value !== undefined && { value: frame.value }) };
      const waiter = new FrameAnswer(data, frame.ref, (text) => this.answer(ws, text), this.o.onError);
      const at = this.o.now();
      const once = frame.idempotencyKey ?? '';
      const layout = this.d.layouts.get(body.layoutId);
      if (layout instanceof Promise) layout.then((l) => this.intake.take(body, data.claims, l, once, at, waiter)).catch((e: unknown) => waiter.failed(e));
      else this.intake.take(body, data.claims, layout, once, at, waiter);
    } catch (e) {
      this.answer(ws, errorFrame(ref, e));
      if (e instanceof AppError && e.code === 'rate_limited' && ++data.refusedInARow >= FLOOD_CLOSE_AFTER) this.end(ws, CLOSE.flooding, 'too many actions past the budget');
    }
  }

  /**
   * An answer (ack, error): sent whatever the state frames do, while the socket is open (uWS throws
   * on a send to a closed one; the close handler marks it). One that uWS drops past the answers'
   * limit closes the socket with 4008.
   */
  private answer(ws: LiveSocket, text: string): void {
    if (ws.getUserData().open && ws.send(text) === DROPPED) this.end(ws, CLOSE.tooSlow, 'too slow to read');
  }

  /** The crowd's values on a layout changed: each of its sockets in step with the page gets those on its page. */
  crowdChanged(layoutId: string, values: readonly CrowdValue[]): void {
    const set = this.byLayout.get(layoutId);
    if (!set) return;
    const fan = (layout: LiveLayout | null) => {
      if (!layout) return;
      const lids = crowdLids(layout);
      const texts = values.filter((v) => lids.has(v.lid)).map(crowdFrame);
      if (texts.length === 0) return;
      for (const ws of set) {
        const data = ws.getUserData();
        if (data.version !== layout.version || data.overSince !== null) continue; // it gets the page and the crowd with it
        ws.cork(() => {
          for (const text of texts) if (!this.sendState(ws, data, text)) return;
        });
      }
    };
    const layout = this.d.layouts.get(layoutId);
    if (layout instanceof Promise) layout.then(fan, (e: unknown) => (e instanceof AppError ? this.o.onUnavailable('live_crowd') : this.o.onError(e)));
    else fan(layout);
  }

  private end(ws: LiveSocket, code: number, reason: string): void {
    const data = ws.getUserData();
    if (!data.open) return;
    data.open = false;
    this.o.onClosed?.(code);
    ws.end(code, reason);
  }

  /** A layout changed (page switch, re-import, revocations, gone): each of its sockets gets the new page, or is closed. */
  layoutChanged(layoutId: string): void {
    const set = this.byLayout.get(layoutId);
    if (!set) return;
    void Promise.resolve(this.d.layouts.get(layoutId)).then(
      (layout) => {
        for (const ws of [...set]) {
          if (!layout) this.end(ws, CLOSE.layoutGone, 'the layout is gone');
          else if (revokedByLayout(ws.getUserData().claims, layout)) this.end(ws, CLOSE.tokenInvalid, ERRORS.token_revoked.message);
          else void this.sendPage(ws);
        }
      },
      (e: unknown) => {
        if (e instanceof AppError) this.o.onUnavailable('live_page');
        else this.o.onError(e);
      },
    );
  }

  /** An API key was revoked: the sockets of the tokens it minted close with 4001. */
  keyRevoked(keyId: string): void {
    for (const set of this.byLayout.values()) for (const ws of [...set]) if (ws.getUserData().claims.keyId === keyId) this.end(ws, CLOSE.tokenInvalid, ERRORS.token_revoked.message);
  }

  /** The signing keys changed: the sockets of tokens signed with a key no longer active close with 4001. */
  signingKeysChanged(active: (kid: string) => boolean): void {
    for (const set of this.byLayout.values()) for (const ws of [...set]) if (!active(ws.getUserData().claims.kid)) this.end(ws, CLOSE.tokenInvalid, ERRORS.token_revoked.message);
  }

  /**
   * The gateway stops: every socket closes with 1001, so clients reconnect elsewhere, spread evenly
   * over `spreadMs` (in 20 steps) so that thousands of phones do not all reconnect in the same
   * millisecond. Resolves once all are closed.
   */
  async closeAll(spreadMs = CLOSE_SPREAD_MS): Promise<void> {
    clearInterval(this.sweeper);
    const all = [...this.byLayout.values()].flatMap((set) => [...set]);
    const steps = 20;
    for (let step = 0; step < steps && all.length > 0; step++) {
      const share = Math.ceil(all.length / (steps - step));
      for (const ws of all.splice(0, share)) this.end(ws, CLOSE.goingAway, 'the gateway is stopping');
      if (all.length > 0) await new Promise((r) => setTimeout(r, spreadMs / steps));
    }
  }
}
