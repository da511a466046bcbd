// What every admin API request goes through: the session cookie, the CSRF token on
// state-changing requests, and an Origin that is this site's own.
import { clientAddress, TrustedProxies } from '../http/client-address.js';
import type { GatewayConfig } from '../config.js';
import { AppError, orUnavailable } from '../errors.js';
import type { RequestHead } from '../http/route.js';
import { SESSION_COOKIE, SIGNED_IN_HINT, csrfMatches, readCookie, type Session, type SessionStore } from './sessions.js';

export interface AdminRequest {
  session: Session;
  sessionId: string;
}

export class AdminGuard {
  private readonly proxies: TrustedProxies;

  constructor(
    private readonly sessions: SessionStore,
    private readonly config: Pick<GatewayConfig, 'trustProxy' | 'adminSecureCookie' | 'adminSessionMaxSeconds'>,
  ) {
    this.proxies = TrustedProxies.parse(config.trustProxy);
  }

  /** The request came over TLS, as the trusted proxy it came through says. */
  private overTls(head: RequestHead): boolean {
    return head.headers['x-forwarded-proto'] === 'https' && this.proxies.trusts(head.remoteAddress);
  }

  /**
   * Browsers send Origin on state-changing requests; it must be this server's own origin: the same
   * scheme (https only behind a trusted TLS proxy that says so), host and port. Scripts send none.
   */
  checkOrigin(head: RequestHead): void {
    const origin = head.headers.origin;
    if (!origin) return;
    const scheme = this.overTls(head) ? 'https' : 'http';
    let same: boolean;
    try {
      same = new URL(origin).origin === new URL(`${scheme}://${head.headers.host}`).origin; // default ports fold away
    } catch {
      same = false;
    }
    if (!same) throw new AppError('origin_not_allowed');
  }

  /** The signed-in administrator; with `stateChanging`, also the Origin and the CSRF token. */
  async require(head: RequestHead, stateChanging: boolean): Promise<AdminRequest> {
    if (stateChanging) this.checkOrigin(head);
    const sessionId = readCookie(head.headers.cookie, SESSION_COOKIE);
    const session = sessionId ? await orUnavailable(this.sessions.get(sessionId)) : null;
    if (!session || !sessionId) throw new AppError('session_required');
    if (stateChanging && !csrfMatches(session, head.headers['x-csrf-token'])) throw new AppError('csrf_failed');
    return { session, sessionId };
  }

  /** The client's address for rate limiting (behind a trusted proxy, the hop that proxy wrote). */
  clientAddress(head: RequestHead): string {
    return clientAddress(head.remoteAddress, head.headers['x-forwarded-for'], this.proxies);
  }

  private secure(head: RequestHead): boolean {
    if (this.config.adminSecureCookie !== 'auto') return this.config.adminSecureCookie === 'always';
    return this.overTls(head);
  }

  /**
   * The session cookie, and beside it the readable hint `ac_signed_in=1` (no secret in it): the
   * page asks for its session only when the hint is there, so a signed-out load makes no request
   * that answers 401.
   */
  setCookies(head: RequestHead, sessionId: string): (readonly [string, string])[] {
    const attrs = ['SameSite=Strict', 'Path=/', `Max-Age=${this.config.adminSessionMaxSeconds}`, ...(this.secure(head) ? ['Secure'] : [])].join('; ');
    return [
      ['set-cookie', `${SESSION_COOKIE}=${sessionId}; HttpOnly; ${attrs}`],
      ['set-cookie', `${SIGNED_IN_HINT}=1; ${attrs}`],
    ];
  }

  clearCookies(head: RequestHead): (readonly [string, string])[] {
    const attrs = `SameSite=Strict; Path=/; Max-Age=0${this.secure(head) ? '; Secure' : ''}`;
    return [
      ['set-cookie', `${SESSION_COOKIE}=; HttpOnly; ${attrs}`],
      ['set-cookie', `${SIGNED_IN_HINT}=; ${attrs}`],
    ];
  }
}
