// The live channel: GET /live upgrades to a WebSocket on which a phone sees what is live and acts.
// The client offers two subprotocols, `audience-control.v1` and `bearer.<audience token>` (a
// browser's WebSocket cannot send headers, and a token in the URL would land in access logs); the
// server selects `audience-control.v1`. The server sends the layout's active page first and again after every
// page switch or re-import; the client sends actions, each answered by an ack once stored (the
// moment POST /action answers 200) or an error with the same codes as the HTTP API. Actions take
// the same intake as POST /action, so one participant has one budget whichever way it acts. A
// socket whose token stops being valid is closed with 4001, one whose layout is gone with 4004,
// and every socket with 1001 when the gateway stops.
import type { HttpRequest, HttpResponse, TemplatedApp, WebSocket, us_socket_context_t } from 'uWebSockets.js';
import { WHOLE_DOCUMENT, describeFirstError, validateLiveActionFrame } from '../../schemas/validators.js';
import type { ActionIntake, IntakeWaiter } from '../actions/intake.js';
import { revokedByLayout, type AudienceClaims } from '../auth/audience-tokens.js';
import { AppError, ERRORS } from '../errors.js';
import type { LiveLayout } from '../layouts/layout-cache.js';
import { TokenBuckets } from '../limits/token-buckets.js';
import type { RouteDeps } from '../routes/deps.js';

/** Close codes that tell a client what to do. */
export const CLOSE = {
  /** the token is no longer valid (its key revoked, its layout's tokens revoked, its signing key retired): do not reconnect with it */
  tokenInvalid: 4001,
  /** the layout is gone */
  layoutGone: 4004,
  /** the client kept sending past its budget (FLOOD_CLOSE_AFTER refusals in a row): reconnect later, slower */
  flooding: 4029,
  /** this gateway is stopping: reconnect (with jitter) */
  goingAway: 1001,
} as const;

/** A socket whose actions were refused as rate_limited this many times in a row is closed (4029). */
export const FLOOD_CLOSE_AFTER = 50;

/** A stopping gateway closes its sockets over this long, so their reconnects are spread too. */
export const CLOSE_SPREAD_MS = 1000;

interface SocketData {
  claims: AudienceClaims;
  layoutId: string;
  /** the version of the layout whose page this socket was last sent */
  version: number;
  open: boolean;
  /** actions refused as rate_limited in a row (an accepted one resets it) */
  refusedInARow: number;
}
type LiveSocket = WebSocket<SocketData>;

export interface LiveOptions {
  /** the largest frame a client may send; a larger one closes the socket (uWS) */
  maxFrameBytes: number;
  /** sockets this process holds at most, and new ones it accepts a second: past either, 503 before the upgrade */
  maxSockets: number;
  newSocketsPerSecond: number;
  now: () => number;
  /** an error that is not an AppError (a bug): logged by the gateway */
  onError: (e: unknown) => void;
  /** a page that could not be read or sent (Redis away): counted in the gateway's summary log, the socket keeps its last page */
  onUnavailable: (what: string) => void;
}

/** The subprotocol the server selects: the frames of this version. */
export const PROTOCOL = 'audience-control.v1';
const BEARER = 'bearer.';

/** What the client offered in Sec-WebSocket-Protocol: this protocol, and the token in `bearer.<token>`. */
export function offeredProtocols(header: string): { protocol: boolean; token: string } {
  let protocol = false;
  let token = '';
  for (const part of header.split(',')) {
    const p = part.trim();
    if (p === PROTOCOL) protocol = true;
    else if (p.startsWith(BEARER)) token = p.slice(BEARER.length);
  }
  return { protocol, token };
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/** An error frame: the HTTP API's body for the same code, with the client's ref. */
function errorFrame(ref: string | null, e: unknown): string {
  const err = e instanceof AppError ? e : new AppError('internal');
  const retry = err.headers.find(([name]) => name === 'retry-after');
  return JSON.stringify({ op: 'error', ref, error: { code: err.code, message: err.message, ...(retry && { retryAfterMs: Number(retry[1]) * 1000 }) } });
}

const STATUS_TEXT: Record<number, string> = { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 503: 'Service Unavailable' };

export class LiveChannel {
  /** the open sockets, by layout */
  private readonly byLayout = new Map<string, Set<LiveSocket>>();
  /** the upgrades accepted lately (one bucket: this process's) */
  private readonly upgrades = new TokenBuckets(1);
  /** sockets open now (an upgrade under way is not counted yet, so a burst may pass the cap by a few) */
  private held = 0;

  constructor(
    private readonly d: RouteDeps,
    private readonly intake: ActionIntake,
    private readonly o: LiveOptions,
  ) {}

  mount(app: TemplatedApp): void {
    app.ws<SocketData>('/live', {
      maxPayloadLength: this.o.maxFrameBytes,
      idleTimeout: 60,
      sendPingsAutomatically: true,
      maxBackpressure: 64 * 1024,
      upgrade: (res, req, context) => this.upgrade(res, req, context),
      open: (ws) => this.opened(ws),
      message: (ws, message, isBinary) => this.received(ws, message, isBinary),
      close: (ws) => this.closed(ws),
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
      const err = e instanceof AppError ? e : new AppError('internal');
      res.cork(() => {
        res.writeStatus(`${err.status} ${STATUS_TEXT[err.status] ?? 'Error'}`).writeHeader('content-type', 'application/json');
        for (const [name, value] of err.headers) res.writeHeader(name, value);
        res.end(JSON.stringify({ success: false, error: { code: err.code, message: err.message } }));
      });
    };
    const accept = (claims: AudienceClaims, layout: LiveLayout | null) => {
      if (!layout || layout.teamId !== claims.team) throw new AppError('layout_not_found');
      if (revokedByLayout(claims, layout)) throw new AppError('token_revoked');
      if (aborted) return;
      res.cork(() => res.upgrade<SocketData>({ claims, layoutId: layout.layoutId, version: -1, open: true, refusedInARow: 0 }, key, PROTOCOL, extensions, context));
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
      const verified = this.d.tokens.verify(offered.token);
      void Promise.resolve(verified)
        .then(async (claims) => accept(claims, await this.d.layouts.get(claims.layoutId)))
        .catch(refuse);
    } catch (e) {
      refuse(e);
    }
  }

  private opened(ws: LiveSocket): void {
    this.held++;
    const data = ws.getUserData();
    let set = this.byLayout.get(data.layoutId);
    if (!set) this.byLayout.set(data.layoutId, (set = new Set()));
    set.add(ws);
    void this.sendPage(ws);
  }

  private closed(ws: LiveSocket): void {
    this.held--;
    const data = ws.getUserData();
    data.open = false;
    const set = this.byLayout.get(data.layoutId);
    set?.delete(ws);
    if (set?.size === 0) this.byLayout.delete(data.layoutId);
  }

  /** The layout's active page, as GET /layout answers it, with its version; nothing when it did not change for this socket. */
  private async sendPage(ws: LiveSocket): Promise<void> {
    const data = ws.getUserData();
    try {
      const layout = await this.d.layouts.get(data.layoutId);
      if (!data.open) return;
      if (!layout) return this.end(ws, CLOSE.layoutGone, 'the layout is gone');
      if (layout.version === data.version) return;
      const destinationCount = await this.d.destinations.count(data.layoutId).catch(() => {
        this.o.onUnavailable('live_destination_count');
        return 0; // the page still goes out: the count is a hint
      });
      if (!data.open) return;
      data.version = layout.version;
      ws.send(JSON.stringify({ op: 'page', layoutId: layout.layoutId, activePageId: layout.activePageId, controls: layout.activeControls, destinationCount, version: layout.version }));
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
      return this.reply(ws, errorFrame(null, e instanceof AppError ? e : new AppError('invalid_json')));
    }
    const ref = typeof (frame as { ref?: unknown } | null)?.ref === 'string' ? ((frame as { ref: string }).ref.slice(0, 64) || null) : null;
    try {
      if (!validateLiveActionFrame(frame, WHOLE_DOCUMENT)) throw new AppError('invalid_body', describeFirstError(validateLiveActionFrame.errors, 'frame'));
      if (frame.layoutId !== undefined && frame.layoutId !== data.claims.layoutId) throw new AppError('token_layout_mismatch');
      const body = { layoutId: data.claims.layoutId, lid: frame.lid, type: frame.type, ...(frame.value !== undefined && { value: frame.value }) };
      const waiter = new FrameAnswer(ws, data, frame.ref, this.o.onError);
      const at = this.o.now();
      const once = frame.idempotencyKey ?? '';
      const layout = this.d.layouts.get(body.layoutId);
      if (layout instanceof Promise) layout.then((l) => this.intake.take(body, data.claims, l, once, at, waiter)).catch((e: unknown) => waiter.failed(e));
      else this.intake.take(body, data.claims, layout, once, at, waiter);
    } catch (e) {
      this.reply(ws, errorFrame(ref, e));
      if (e instanceof AppError && e.code === 'rate_limited' && ++data.refusedInARow >= FLOOD_CLOSE_AFTER) this.end(ws, CLOSE.flooding, 'too many actions past the budget');
    }
  }

  /** A frame in answer to the one being handled (the socket is open while its message handler runs). */
  private reply(ws: LiveSocket, text: string): void {
    ws.send(text);
  }

  private end(ws: LiveSocket, code: number, reason: string): void {
    const data = ws.getUserData();
    if (!data.open) return;
    data.open = false;
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
    const all = [...this.byLayout.values()].flatMap((set) => [...set]);
    const steps = 20;
    for (let step = 0; step < steps && all.length > 0; step++) {
      const share = Math.ceil(all.length / (steps - step));
      for (const ws of all.splice(0, share)) this.end(ws, CLOSE.goingAway, 'the gateway is stopping');
      if (all.length > 0) await new Promise((r) => setTimeout(r, spreadMs / steps));
    }
  }
}

/**
 * One action frame's answer: an ack once stored, or an error frame with the HTTP API's code. Sent
 * only while the socket is open (uWS throws on a send to a closed one), which the socket's data
 * says: the close handler marks it.
 */
class FrameAnswer implements IntakeWaiter {
  constructor(
    private readonly ws: LiveSocket,
    private readonly data: SocketData,
    private readonly ref: string,
    private readonly onError: (e: unknown) => void,
  ) {}

  stored(): void {
    this.data.refusedInARow = 0;
    if (this.data.open) this.ws.send(JSON.stringify({ op: 'ack', ref: this.ref }));
  }

  failed(e: unknown): void {
    if (!(e instanceof AppError)) this.onError(e);
    if (this.data.open) this.ws.send(errorFrame(this.ref, e));
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
