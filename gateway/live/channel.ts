// The live channel: GET /live upgrades to a WebSocket on which a phone sees what is live and acts.
// The client offers two subprotocols, `audience-control.v1` and `bearer.<audience token>` (a
// browser's WebSocket cannot send headers, and a token in the URL would land in access logs); the
// server selects `audience-control.v1`. The server sends the layout's active page first and again
// after every page switch or re-import, and the crowd's value of each aggregated control on the
// page as it changes (at most 4 times a second); the client sends actions, each answered by an ack
// once stored (the moment POST /action answers 200) or an error with the HTTP API's codes. Actions
// take the same intake as POST /action, so one participant has one budget whichever way it acts.
// Page and crowd frames are latest-value state, published once per layout on its uWS topic (uWS
// writes them to every socket in C++): a socket that cannot keep up leaves the topic, is sent the
// current state when it drains, and is closed with 4008 if it stays behind.
import type { TemplatedApp } from 'uWebSockets.js';
import { WHOLE_DOCUMENT, describeFirstError, validateLiveActionFrame } from '../../schemas/validators.js';
import type { ActionIntake } from '../actions/intake.js';
import type { CrowdValue } from '../../schemas/crowd-merge.js';
import { revokedByLayout } from '../auth/audience-tokens.js';
import { AppError, ERRORS } from '../errors.js';
import type { LiveLayout } from '../layouts/layout-cache.js';
import { TokenBuckets } from '../limits/token-buckets.js';
import type { RouteDeps } from '../routes/deps.js';
import type { CrowdFeed } from './crowd-feed.js';
import { AnswerQueue, DROPPED } from './answers.js';
import { CLOSE, crowdFrame, crowdLids, errorFrame, pageFrame } from './frames.js';
import { FrameAnswer, type LiveOptions, type LiveSocket, type SocketData } from './socket.js';
import { upgradeLive } from './upgrade.js';

export type { LiveOptions } from './socket.js';

export { CLOSE, PROTOCOL } from './frames.js';

/** A socket whose actions were refused as rate_limited this many times in a row is closed (4029). */
export const FLOOD_CLOSE_AFTER = 50;

/** Answers may fill a socket's buffer to this many times LIVE_BUFFER_BYTES (1 MiB by default). */
const ANSWER_BUFFER_FACTOR = 64;
/** The uWS topic of a layout's sockets that are in step with its page. */
const topicOf = (layoutId: string) => `layout:${layoutId}`;

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
  private app: TemplatedApp | null = null;
  /** the version of each layout whose page was last published to its sockets */
  private readonly published = new Map<string, number>();
  /** answers to actions, written once per socket and turn */
  private readonly answers = new AnswerQueue((ws) => this.end(ws, CLOSE.tooSlow, 'too slow to read'));

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

  /** Before anything else is spent on an upgrade: a storm of reconnects is refused at the door (503). */
  private admit(): void {
    if (this.held >= this.o.maxSockets) throw new AppError('unavailable', 'This gateway holds as many live sockets as it may; connect again (to another gateway).', undefined, [['retry-after', '1']]);
    if (this.upgrades.take('upgrades', { ratePerSecond: this.o.newSocketsPerSecond, burst: this.o.newSocketsPerSecond }, this.o.now()) > 0) {
      throw new AppError('unavailable', 'Too many new live sockets this second; connect again shortly.', undefined, [['retry-after', '1']]);
    }
  }

  /** Sockets open on this process now. */
  get sockets(): number {
    return this.held;
  }

  mount(app: TemplatedApp): void {
    this.app = app;
    app.ws<SocketData>('/live', {
      maxPayloadLength: this.o.maxFrameBytes,
      idleTimeout: 60,
      sendPingsAutomatically: true,
      // answers (ack, error) pass the state frames' limit, behind a large page on a slow network too:
      // past this uWS drops a send, and the socket is closed (4008)
      maxBackpressure: ANSWER_BUFFER_FACTOR * this.o.bufferBytes,
      closeOnBackpressureLimit: false,
      drain: (ws) => this.drained(ws),
      upgrade: (res, req, context) =>
        upgradeLive(res, req, context, {
          deps: this.d,
          admit: () => this.admit(),
          newSocket: (claims, layoutId) => ({ claims, layoutId, version: -1, open: true, refusedInARow: 0, overSince: null, stale: false, openedAt: this.o.now() }),
          onError: this.o.onError,
        }),
      open: (ws) => this.opened(ws),
      message: (ws, message, isBinary) => this.received(ws, message, isBinary),
      close: (ws, code) => this.closed(ws, code),
    });
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
      this.published.delete(data.layoutId);
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
    if (ws.getBufferedAmount() > this.o.bufferBytes) this.fellBehind(ws, data);
    return true;
  }

  /** A socket over its buffer: off its layout's topic (what is published meanwhile skips it) until it drains. */
  private fellBehind(ws: LiveSocket, data: SocketData): void {
    data.overSince = this.o.now();
    data.stale = true;
    ws.unsubscribe(topicOf(data.layoutId));
    this.behind.add(ws);
  }

  /** A socket's buffer drained: one back under its limit that skipped state gets the current page and crowd. */
  private drained(ws: LiveSocket): void {
    const data = ws.getUserData();
    if (data.overSince === null || ws.getBufferedAmount() > this.o.bufferBytes) return;
    data.overSince = null;
    this.behind.delete(ws);
    data.stale = false;
    void this.sendPage(ws, true); // the current page and crowd, then its topic again
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
      const destinationCount = await this.d.destinations.count(data.layoutId).catch(() => {
        this.o.onUnavailable('live_destination_count');
        return 0; // the page still goes out: the count is a hint
      });
      if (!data.open || data.overSince !== null) return; // it catches up when it drains
      const lids = crowdLids(layout);
      ws.cork(() => {
        if (!this.sendState(ws, data, pageFrame(layout, destinationCount))) return;
        data.version = layout.version;
        if (withCrowd) for (const v of this.crowd?.current(data.layoutId) ?? []) if (lids.has(v.lid) && !this.sendState(ws, data, crowdFrame(v))) return;
        // in step: from now on the layout's page and crowd frames reach it by the layout's topic
        if (data.overSince === null) ws.subscribe(topicOf(data.layoutId));
      });
      // a page published between the read above and the subscription: this one missed it
      const now = await this.d.layouts.get(data.layoutId);
      if (now && now.version !== data.version && data.open && data.overSince === null) void this.sendPage(ws, true);
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
      const waiter = new FrameAnswer(ws, data, frame.ref, this.answers, this.o.onError);
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
   * An error answer to a frame, sent at once from inside the frame's handler (where uWS has the
   * socket corked), so it goes out before a close that follows it (4029); answers that come later,
   * from the action log, go through the AnswerQueue. Sent whatever the state frames do, while the
   * socket is open; one that uWS drops past the answers' limit closes the socket with 4008.
   */
  private answer(ws: LiveSocket, text: string): void {
    if (ws.getUserData().open && ws.send(text) === DROPPED) this.end(ws, CLOSE.tooSlow, 'too slow to read');
  }

  /** The crowd's values on a layout changed: those on its live page are published to its sockets in step. */
  crowdChanged(layoutId: string, values: readonly CrowdValue[]): void {
    if (!this.byLayout.has(layoutId)) return;
    const fan = (layout: LiveLayout | null) => {
      if (!layout || !this.app) return;
      const lids = crowdLids(layout);
      const texts = values.filter((v) => lids.has(v.lid)).map(crowdFrame);
      if (texts.length > 0) this.publish(layoutId, texts);
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
      async (layout) => {
        for (const ws of [...set]) {
          if (!layout) this.end(ws, CLOSE.layoutGone, 'the layout is gone');
          else if (revokedByLayout(ws.getUserData().claims, layout)) this.end(ws, CLOSE.tokenInvalid, ERRORS.token_revoked.message);
        }
        if (layout) await this.publishPage(layout);
      },
      (e: unknown) => {
        if (e instanceof AppError) this.o.onUnavailable('live_page');
        else this.o.onError(e);
      },
    );
  }

  /** A layout's new page (and its crowd's values) to every socket in step, by one publish on its topic. */
  private async publishPage(layout: LiveLayout): Promise<void> {
    if ((this.published.get(layout.layoutId) ?? -1) >= layout.version) return;
    const destinationCount = await this.d.destinations.count(layout.layoutId).catch(() => {
      this.o.onUnavailable('live_destination_count');
      return 0;
    });
    if (!this.app || (this.published.get(layout.layoutId) ?? -1) >= layout.version) return;
    this.published.set(layout.layoutId, layout.version);
    const lids = crowdLids(layout);
    this.publish(layout.layoutId, [pageFrame(layout, destinationCount), ...(this.crowd?.current(layout.layoutId) ?? []).filter((v) => lids.has(v.lid)).map(crowdFrame)]);
  }

  /**
   * State frames to every socket of a layout in step, by one publish each on its topic (uWS writes
   * them in C++, batched per socket). A socket over its buffer leaves the topic first, so it is
   * known to have skipped them and gets the current state when it drains (uWS itself would drop
   * them past maxBackpressure without telling).
   */
  private publish(layoutId: string, texts: readonly string[]): void {
    const set = this.byLayout.get(layoutId);
    if (!set || !this.app) return;
    for (const ws of set) {
      const data = ws.getUserData();
      if (data.overSince === null && ws.getBufferedAmount() > this.o.bufferBytes) this.fellBehind(ws, data);
      if (data.overSince !== null) this.o.onSkipped?.(texts.length);
    }
    for (const text of texts) this.app.publish(topicOf(layoutId), text);
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
