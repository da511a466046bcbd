// One live socket: what the gateway keeps with it; the live channel's options, and the narrow
// services it uses.
import type { TrustedProxies } from '../http/client-address.js';
import type { WebSocket } from 'uWebSockets.js';
import type { ActionRequest } from '../../schemas/types.js';
import type { IntakeWaiter } from '../actions/intake.js';
import type { LiveRestatedValue } from '../../schemas/validators.js';
import type { AudienceClaims } from '../auth/token-claims.js';
import type { LiveLayout } from '../layouts/layout-cache.js';
import type { TokenBuckets } from '../limits/token-buckets.js';

export interface SocketData {
  /** the token's claims; a `refresh` frame replaces them with those of the same participant's new token */
  claims: AudienceClaims;
  /** the `expiring` frame went out for the current token */
  noticeSent: boolean;
  layoutId: string;
  /** the version of the layout whose page this socket was last sent */
  version: number;
  open: boolean;
  /** actions refused as rate_limited, and refreshes refused, in a row (an accepted action resets it) */
  refusedInARow: number;
  /** a `refresh` is being checked (the next one is refused until it is answered) */
  refreshing: boolean;
  /** this socket's refreshes lately (one bucket), made on its first refresh: most sockets never send one */
  refreshes: TokenBuckets | null;
  /** when this socket's last `ping` was answered (ms; -Infinity: never) */
  pongAt: number;
  /** this socket's clock exchanges lately (one bucket, FRAME_LIMITS.time), made on its first `time` */
  times: TokenBuckets | null;
  /** the client's latest clock uncertainty (ms; clock-reports.ts), or null before its first report */
  clockMs: number | null;
  /** since when the socket's buffer is over its limit (state frames are skipped meanwhile), or null */
  overSince: number | null;
  /** a state frame was skipped: the socket gets the current state when it drains */
  stale: boolean;
  /** answers (ack, error) waiting for this turn's write (answers.ts); empty between turns */
  answers: string[];
}
export type LiveSocket = WebSocket<SocketData>;

/** What the live channel uses of the gateway: narrow, so live/ knows nothing of the routes. */
export interface LiveServices {
  layouts: { get(layoutId: string): Promise<LiveLayout | null> | LiveLayout | null };
  /** displays the layout's bridges send to (a hint on the page frame) */
  destinations: { count(layoutId: string): Promise<number> };
  tokens: {
    verify(token: string): AudienceClaims | Promise<AudienceClaims>;
    /** the very token is in the verified-token cache (its check costs no verify) */
    known(token: string): boolean;
  };
  cors: { allows(origin: string): boolean };
  /** which process holds each participant: a socket opened here claims it; resolves with its opens this minute over every process (0: unknown) */
  claims?: {
    opened(layoutId: string, sub: string): Promise<{ opens: number; older: boolean }>;
    /** the live channel's sockets, which keep their participants' claims and close when another process takes one */
    attachSockets(sockets: { hasParticipant(layoutId: string, sub: string): boolean; replaced(layoutId: string, sub: string): void }): void;
  };
  /** one participant's action, as POST /action takes it */
  intake: {
    accept(body: ActionRequest, claims: AudienceClaims, once: string, at: number, waiter: IntakeWaiter): void;
    restate(values: readonly LiveRestatedValue[], claims: AudienceClaims, layout: LiveLayout | null, at: number): Promise<void>;
  };
}

export interface LiveOptions {
  /** the largest frame a client may send; a larger one closes the socket (uWS) */
  maxFrameBytes: number;
  /** sockets this process holds at most, and new ones it accepts a second: past either, 503 before the upgrade */
  maxSockets: number;
  newSocketsPerSecond: number;
  /** bytes waiting on a socket past which state frames are skipped (answers may fill 64 times this) */
  bufferBytes: number;
  /** a socket behind this long is closed with CLOSE.tooSlow */
  slowCloseMs: number;
  /** a socket from which nothing arrives this long (seconds) is closed: a half-open one too */
  idleTimeoutSeconds: number;
  /** this long before a socket's token expires it gets `expiring`; at expiry it is closed (CLOSE.tokenExpired) */
  expiryNoticeMs: number;
  /** sockets one participant holds at most; a new one past it replaces the oldest (CLOSE.replaced) */
  socketsPerParticipant: number;
  /** upgrades one participant may make a minute (as many at once); past it 429 */
  opensPerParticipantPerMinute: number;
  /** refused upgrades one peer address may make a second (twice as many at once); past it 429 for tokens not checked here yet */
  refusedUpgradesPerAddressPerSecond: number;
  /** the load balancer (TRUST_PROXY): from it, the last X-Forwarded-For hop is the peer's address */
  trustProxy: TrustedProxies;
  /** a stopping gateway closes its sockets over this long (CLOSE.serviceRestart, with when to come back) */
  drainMs: number;
  now: () => number;
  /** now in the deployment's timebase (Redis's clock), to a fraction of a ms: the answers to `time` */
  serverNow: () => number;
  /** an error that is not an AppError (a bug): logged by the gateway */
  onError: (e: unknown) => void;
  /** a client reported its clock's uncertainty (ms) on a `time` exchange: the sync histogram */
  onClockReport?: (layoutId: string, zone: string, ms: number) => void;
  /** a page that could not be read or sent (Redis away): counted in the gateway's summary log, the socket keeps its last page */
  onUnavailable: (what: string) => void;
  /** state frames skipped for a socket over its buffer */
  onSkipped?: (frames?: number) => void;
  /** a socket the gateway closed, with the code */
  onClosed?: (code: number) => void;
  /** a socket uWS dropped right after an asynchronous upgrade (uNetworking/uWebSockets#1928) */
  onLostAtUpgrade?: () => void;
}
