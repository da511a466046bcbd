// The upgrade to a live socket: everything is checked before it, and a refusal is the HTTP API's
// error answer (its body and code), never a socket. In order: Connection: Upgrade (400), the
// process's socket cap (503), the Origin (as CORS for POST /action), the subprotocol
// audience-control.v1, the audience token in `bearer.<token>` (a token not checked here before
// only while the peer address is within its refused upgrades, else 429), the participant's opens a
// minute (429), its layout (there, not revoked for this token), and last the process's new sockets
// a second (503): only an upgrade that passed spends that budget. Each refusal of the peer's own
// making (4xx) spends its address's budget.
import type { HttpRequest, HttpResponse, us_socket_context_t } from 'uWebSockets.js';
import { revokedByLayout, type AudienceClaims } from '../auth/token-claims.js';
import { AppError } from '../errors.js';
import { errorReply, internalError, send } from '../http/reply.js';
import { requestId } from '../http/server.js';
import type { LiveLayout } from '../layouts/layout-cache.js';
import { LIVE_SUBPROTOCOL } from '../../schemas/live-protocol.js';
import { offeredProtocols } from './frames.js';
import type { LiveServices, SocketData } from './socket.js';

export interface UpgradeGate {
  deps: Pick<LiveServices, 'cors' | 'tokens' | 'layouts'>;
  /** throws the 503 of a process at its socket cap */
  admit: () => void;
  /** throws the 503 of a process past its new sockets a second (an upgrade that passed every other check) */
  admitNew: () => void;
  /** the peer's address (behind a trusted proxy, the one it forwarded) */
  address: (res: HttpResponse, req: HttpRequest) => string;
  /** throws the 429 of an address past its refused upgrades (before a token not in the cache is checked) */
  admitAddress: (address: string) => void;
  /** an upgrade from the address was refused with a 4xx of its own making */
  refusedFrom: (address: string) => void;
  /** throws the 429 of a participant past its opens a minute */
  admitParticipant: (claims: AudienceClaims) => void;
  newSocket: (claims: AudienceClaims, layoutId: string) => SocketData;
  /** an error that is not an AppError (a bug) */
  onError: (e: unknown) => void;
  /**
   * runs the corked upgrade after an await: a socket closed before it returns was closed by uWS
   * itself (uNetworking/uWebSockets#1928), never by its client
   */
  upgrading: (run: () => void) => void;
}

export function upgradeLive(res: HttpResponse, req: HttpRequest, context: us_socket_context_t, gate: UpgradeGate): void {
  const d = gate.deps;
  const key = req.getHeader('sec-websocket-key');
  const offered = offeredProtocols(req.getHeader('sec-websocket-protocol'));
  const extensions = req.getHeader('sec-websocket-extensions');
  const origin = req.getHeader('origin');
  const connection = req.getHeader('connection');
  const address = gate.address(res, req);
  let aborted = false;
  res.onAborted(() => (aborted = true));
  const refuse = (e: unknown) => {
    // a 4xx of the peer's own making spends its address's budget; a 503 is the process's, and a
    // budget's own 429 is counted by that budget
    if (e instanceof AppError && e.status < 500 && e.code !== 'rate_limited') gate.refusedFrom(address);
    if (aborted) return;
    if (!(e instanceof AppError)) gate.onError(e);
    send(res, requestId(), errorReply(e instanceof AppError ? e : internalError()), []); // the API's error answer, as any route's
  };
  /** `now`: still inside this handler, where uWS has the response corked */
  const accept = (claims: AudienceClaims, layout: LiveLayout | null, now: boolean) => {
    gate.admitParticipant(claims);
    if (!layout || layout.teamId !== claims.team) throw new AppError('layout_not_found');
    if (revokedByLayout(claims, layout)) throw new AppError('token_revoked');
    if (aborted) return;
    gate.admitNew();
    const upgrade = () => res.upgrade<SocketData>(gate.newSocket(claims, layout.layoutId), key, LIVE_SUBPROTOCOL, extensions, context);
    if (now) upgrade();
    else gate.upgrading(() => res.cork(upgrade));
  };
  try {
    // RFC 6455 asks for Connection: Upgrade. uWS takes a 5-character Connection value ("close") for
    // the end of the HTTP connection and, after an asynchronous upgrade, closes the new socket.
    if (!connection.split(',').some((t) => t.trim().toLowerCase() === 'upgrade')) throw new AppError('upgrade_invalid');
    gate.admit();
    if (!d.tokens.known(offered.token)) gate.admitAddress(address);
    if (origin !== '' && !d.cors.allows(origin)) throw new AppError('origin_not_allowed');
    if (!offered.protocol) throw new AppError('protocol_missing');
    if (offered.token === '') throw new AppError('token_missing', 'Offer the audience token as the subprotocol bearer.<token>, beside audience-control.v1.');
    // A token verified before and a cached layout (a reconnect) upgrade at once, inside this
    // handler. Otherwise the upgrade completes after the await, in res.cork: there uWS (v20.51)
    // now and then closes the new socket right after it opens (uNetworking/uWebSockets#1928); it
    // is counted, and clients reconnect.
    const verified = d.tokens.verify(offered.token);
    const layout = verified instanceof Promise ? null : d.layouts.get(verified.layoutId);
    if (!(verified instanceof Promise) && !(layout instanceof Promise)) return accept(verified, layout, true);
    void Promise.resolve(verified)
      .then(async (claims) => accept(claims, await d.layouts.get(claims.layoutId), false))
      .catch(refuse);
  } catch (e) {
    refuse(e);
  }
}
