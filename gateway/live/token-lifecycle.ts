// A live socket's token over the socket's life. `exp` holds on open sockets too: expiryNoticeMs
// before it the socket gets `expiring`, and at `exp` it is closed with CLOSE.tokenExpired (renew, then
// reconnect). A client swaps its socket's token without reconnecting by sending `refresh` with the
// same participant's new token (POST /token with renew): answered `refreshed`, or an error frame
// (token_mismatch for another participant's or layout's token; the token's own code when it is
// not valid), and the socket keeps its old token then.
import { CLOSE } from '../../schemas/live-protocol.js';
import { revokedByLayout, type AudienceClaims } from '../auth/audience-tokens.js';
import type { LiveLayout } from '../layouts/layout-cache.js';
import { AppError } from '../errors.js';
import { errorFrame, expiringFrame, refreshedFrame } from './frames.js';
import type { SocketRegistry } from './registry.js';
import type { LiveServices, LiveSocket, SocketData } from './socket.js';

/** How often the expiry of every open socket's token is looked at. */
const CHECK_EVERY_MS = 1000;

export class TokenLifecycle {
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly registry: SocketRegistry,
    private readonly s: Pick<LiveServices, 'tokens' | 'layouts'>,
    /** sends an answer frame on a socket (whatever its state frames do) */
    private readonly answer: (ws: LiveSocket, data: SocketData, text: string) => void,
    private readonly o: { expiryNoticeMs: number; now: () => number; onError: (e: unknown) => void },
  ) {
    this.timer = setInterval(() => this.check(), CHECK_EVERY_MS);
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
    const swap = (claims: AudienceClaims, layout: LiveLayout | null) => {
      if (!data.open) return;
      if (claims.sub !== data.claims.sub || claims.layoutId !== data.claims.layoutId) throw new AppError('token_mismatch');
      if (layout && revokedByLayout(claims, layout)) throw new AppError('token_revoked');
      data.claims = claims;
      data.noticeSent = false;
      this.answer(ws, data, refreshedFrame(claims.exp * 1000));
    };
    const refused = (e: unknown) => {
      if (!(e instanceof AppError)) this.o.onError(e);
      if (data.open) this.answer(ws, data, errorFrame(null, e));
    };
    try {
      const claims = this.s.tokens.verify(token);
      const layout = this.s.layouts.get(data.layoutId);
      if (claims instanceof Promise || layout instanceof Promise) {
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
