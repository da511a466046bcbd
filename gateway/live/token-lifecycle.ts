// A live socket's token over the socket's life. `exp` holds on open sockets too: expiryNoticeMs
// before it the socket gets `expiring`, and at `exp` it is closed with CLOSE.tokenExpired (renew, then
// reconnect). A client swaps its socket's token without reconnecting by sending `refresh` with the
// same participant's new token (POST /token with renew): answered `refreshed`, or an error frame
// (token_mismatch for another participant's or layout's token; the token's own code when it is
// not valid), and the socket keeps its old token then. Refreshes are budgeted (FRAME_LIMITS.refresh):
// one checked at a time per socket, token buckets per socket and per participant, and a refused one
// counts toward the flood close like a refused action, so a stream of forged tokens costs a bounded
// amount of memory and verifies.
import { CLOSE, FRAME_LIMITS } from '../../schemas/live-protocol.js';
import { revokedByLayout, type AudienceClaims } from '../auth/token-claims.js';
import type { LiveLayout } from '../layouts/layout-cache.js';
import { AppError } from '../errors.js';
import { expiringFrame, refreshedFrame } from './frames.js';
import { TokenBuckets } from '../limits/token-buckets.js';
import type { SocketRegistry } from './registry.js';
import type { LiveServices, LiveSocket, SocketData } from './socket.js';

/** How often the expiry of every open socket's token is looked at. */
const CHECK_EVERY_MS = 1000;
/** Participants whose refreshes are remembered at once (a full bucket is forgotten; the oldest first past this). */
const PARTICIPANTS_TRACKED = 100_000;
const R = FRAME_LIMITS.refresh;
const SOCKET_RATE = { ratePerSecond: R.socketPerMinute / 60, burst: R.socketBurst };
const PARTICIPANT_RATE = { ratePerSecond: R.participantPerMinute / 60, burst: R.participantBurst };

export class TokenLifecycle {
  private readonly timer: NodeJS.Timeout;
  /** each participant's refreshes lately, over all its sockets here */
  private readonly participants = new TokenBuckets(PARTICIPANTS_TRACKED);

  constructor(
    private readonly registry: SocketRegistry,
    private readonly s: Pick<LiveServices, 'tokens' | 'layouts'>,
    /** sends an answer frame on a socket (whatever its state frames do) */
    private readonly answer: (ws: LiveSocket, data: SocketData, text: string) => void,
    /** a refresh refused: answers its error frame and counts it toward the flood close */
    private readonly refuse: (ws: LiveSocket, data: SocketData, e: unknown) => void,
    private readonly o: { expiryNoticeMs: number; now: () => number; onError: (e: unknown) => void },
  ) {
    this.timer = setInterval(() => {
      this.check();
      this.participants.sweep(this.o.now());
    }, CHECK_EVERY_MS);
    this.timer.unref();
  }

  /** Every open socket: `expiring` once within the notice, CLOSE.tokenExpired at expiry. */
  check(): void {
    const now = this.o.now();
    const expired: [LiveSocket, SocketData][] = [];
    // every socket is looked at without copying the registry; only the few to close are collected
    this.registry.forEach((ws, data) => {
      const left = data.claims.exp * 1000 - now;
      if (left <= 0) expired.push([ws, data]);
      else if (left <= this.o.expiryNoticeMs && !data.noticeSent) {
        data.noticeSent = true;
        this.answer(ws, data, expiringFrame(data.claims.exp * 1000));
      }
    });
    for (const [ws, data] of expired) this.registry.end(ws, data, CLOSE.tokenExpired, 'token_expired');
  }

  /** A `refresh` frame: the socket takes the new token if it is valid and the same participant's. */
  refresh(ws: LiveSocket, data: SocketData, token: string): void {
    const now = this.o.now();
    if (data.refreshing) return this.refuse(ws, data, limited('A refresh of this socket is being checked; send the next one after its answer.', 1000));
    const socketWait = (data.refreshes ??= new TokenBuckets(1)).take('socket', SOCKET_RATE, now);
    if (socketWait > 0) return this.refuse(ws, data, limited('This socket refreshed its token too often lately.', socketWait));
    const participantWait = this.participants.take(data.claims.sub, PARTICIPANT_RATE, now);
    if (participantWait > 0) return this.refuse(ws, data, limited('This participant refreshed its token too often lately.', participantWait));
    const swap = (claims: AudienceClaims, layout: LiveLayout | null) => {
      data.refreshing = false;
      if (!data.open) return;
      if (claims.sub !== data.claims.sub || claims.layoutId !== data.claims.layoutId) throw new AppError('token_mismatch');
      if (layout && revokedByLayout(claims, layout)) throw new AppError('token_revoked');
      data.claims = claims;
      data.noticeSent = false;
      this.answer(ws, data, refreshedFrame(claims.exp * 1000));
    };
    const refused = (e: unknown) => {
      data.refreshing = false;
      if (!(e instanceof AppError)) this.o.onError(e);
      if (data.open) this.refuse(ws, data, e);
    };
    try {
      const claims = this.s.tokens.verify(token);
      const layout = this.s.layouts.get(data.layoutId);
      if (claims instanceof Promise || layout instanceof Promise) {
        data.refreshing = true;
        Promise.all([claims, layout])
          .then(([c, l]) => swap(c, l))
          .catch(refused);
      } else swap(claims, layout);
    } catch (e) {
      refused(e);
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

function limited(message: string, waitMs: number): AppError {
  return new AppError('rate_limited', message, undefined, [['retry-after', String(Math.ceil(waitMs / 1000))]]);
}
