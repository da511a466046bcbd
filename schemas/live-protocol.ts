// The live channel's protocol, once, for every side that speaks it: the gateway, the client
// library and audience-loadtest import it. The subprotocols, the op of every frame, the close
// codes with what each tells a client to do, and the frame limits. Dependency-free and
// browser-safe: the client package ships it as it is. The frames' shapes are the JSON Schemas
// live-frames.schema.json and live-server-frames.schema.json (their TypeScript types are
// live-types.ts, generated from them).

/** The subprotocol the server selects: the frames of this version. */
export const LIVE_SUBPROTOCOL = 'audience-control.v1';
/** A browser's WebSocket cannot send headers: the token travels as the subprotocol `bearer.<token>`. */
export const BEARER_PREFIX = 'bearer.';

/** The subprotocols a client offers for `token`. */
export function liveSubprotocols(token: string): [string, string] {
  return [LIVE_SUBPROTOCOL, `${BEARER_PREFIX}${token}`];
}

/** The ops of the frames a client sends. */
export const CLIENT_OP = {
  /** a control action, answered by `ack` or `error` with the same ref */
  action: 'action',
  /** a new token for this socket (the same participant's), answered by `refreshed` or `error` */
  refresh: 'refresh',
  /** the latest values the client sent, after a reconnect: counted where none is held (a lost gateway's participant counts again at once), answered by `ack` or `error` */
  restate: 'restate',
  /** a heartbeat, answered by `pong` (FRAME_LIMITS.heartbeat*) */
  ping: 'ping',
  /** a clock exchange: answered by `time` with when the server received and answered it, in the deployment's timebase (FRAME_LIMITS.time) */
  time: 'time',
} as const;

/** The ops of the frames the server sends. */
export const SERVER_OP = {
  page: 'page',
  crowd: 'crowd',
  ack: 'ack',
  error: 'error',
  /** the socket's token expires soon: renew it and send `refresh` */
  expiring: 'expiring',
  /** the answer to `refresh`: the socket now holds the new token */
  refreshed: 'refreshed',
  /** the answer to `ping` */
  pong: 'pong',
  /** the answer to `time`: the server's receive and send times (ms since the epoch, Redis's clock) */
  time: 'time',
  /** a light look for the socket's zone (or every zone), from a server time `at` on: sent ahead of it by the layout's lightLeadMs */
  light: 'light',
} as const;

export type ClientOp = (typeof CLIENT_OP)[keyof typeof CLIENT_OP];
export type ServerOp = (typeof SERVER_OP)[keyof typeof SERVER_OP];

/**
 * How a server frame begins: a JSON object whose first member is its op, `{"op":"<op>"`; an ack's
 * next member is its ref and a crowd frame's its lid. The gateway writes them so (every frame
 * builder is tested for it), and a reader that needs only the op, an ack's ref or a crowd frame's
 * lid reads them from these prefixes without parsing the frame, as the load tester does.
 */
export const serverFramePrefix = (op: ServerOp): string => `{"op":"${op}"`;
/** An ack up to its ref's opening quote: `{"op":"ack","ref":"` */
export const ACK_PREFIX = `${serverFramePrefix(SERVER_OP.ack)},"ref":"`;
/** A crowd frame up to its lid's digits: `{"op":"crowd","lid":` */
export const CROWD_PREFIX = `${serverFramePrefix(SERVER_OP.crowd)},"lid":`;
/** Where a server frame's op begins, in characters (and bytes: the prefix is ASCII). */
export const SERVER_OP_AT = serverFramePrefix(SERVER_OP.ack).length - SERVER_OP.ack.length - 1;

/** Close codes, and what each tells a client to do. */
export const CLOSE = {
  /** the token is no longer valid (revoked: its key, its layout's tokens, this participant, its signing key): get a new one, do not reconnect with it */
  tokenInvalid: 4001,
  /** the token expired while the socket was open: renew it, then reconnect */
  tokenExpired: 4003,
  /** the layout is gone: stop */
  layoutGone: 4004,
  /** the client is too slow to read: reconnect, and start from the current state */
  tooSlow: 4008,
  /** a newer socket of the same participant took this one's place: do not reconnect */
  replaced: 4009,
  /** the client kept sending past its budget: reconnect later, slower */
  flooding: 4029,
  /** this gateway is going away at once: reconnect with jitter */
  goingAway: 1001,
  /** this gateway is restarting or draining: reconnect after the reason's `retryAfterMs`, with jitter */
  serviceRestart: 1012,
} as const;

export type CloseCode = (typeof CLOSE)[keyof typeof CLOSE];

/** What a client does after each close code (any other code: reconnect with backoff). */
export const CLOSE_ACTION: Readonly<Record<CloseCode, 'renew' | 'stop' | 'reconnect' | 'reconnect-later'>> = {
  [CLOSE.tokenInvalid]: 'renew',
  [CLOSE.tokenExpired]: 'renew',
  [CLOSE.layoutGone]: 'stop',
  [CLOSE.tooSlow]: 'reconnect',
  [CLOSE.replaced]: 'stop',
  [CLOSE.flooding]: 'reconnect-later',
  [CLOSE.goingAway]: 'reconnect',
  [CLOSE.serviceRestart]: 'reconnect',
};

/** Limits of the frames, as the schemas state them. */
export const FRAME_LIMITS = {
  /** a client's ref, echoed in its answer */
  refMaxLength: 64,
  /** an idempotency key: 1 to 64 of A-Z a-z 0-9 . _ : - */
  idempotencyKey: /^[A-Za-z0-9._:-]{1,64}$/,
  /** the values one `restate` carries at most (a client holding more sends its newest) */
  restateMaxValues: 32,
  /** a restated value's age, at most (ms) */
  restateMaxAgeMs: 86_400_000,
  /** crowd frames per aggregated control and second, at most */
  crowdFramesPerSecond: 4,
  /**
   * `refresh` frames: one checked at a time per socket, and token buckets per socket and per
   * participant (a renewal needs one a token's life); past them, error rate_limited, and a refusal
   * counts toward the flood close (CLOSE.flooding) as a refused action does
   */
  refresh: { socketBurst: 3, socketPerMinute: 2, participantBurst: 4, participantPerMinute: 4 },
  /**
   * The heartbeat: a client that has heard nothing for heartbeatIdleMs sends `ping`; one that sent
   * a ping or an action and has heard nothing for heartbeatDeadMs since takes its link for dead (a
   * path gone silent, a vanished host: no close ever comes) and reconnects. A silent link is thus
   * seen within about 2 s, so a phone of a lost gateway host is live on another within 3 s. Only
   * a quiet socket pings (a crowd frame or any other resets the wait): at 1,000,000 sockets all
   * quiet, about 950,000 pings a second over the fleet, 14,000 a second for each of 68 processes.
   * The server answers one ping per socket every pingMinMs; one sooner is refused (rate_limited).
   */
  heartbeatIdleMs: 1000,
  heartbeatDeadMs: 1000,
  pingMinMs: 500,
  /**
   * Clock exchanges (`time`): a token bucket per socket, `socketBurst` at once and `socketPerMinute`
   * a minute. Past it the answer is an error rate_limited with the frame's ref and retryAfterMs; the
   * socket stays open (a refused exchange does not count toward the flood close). A client needs a
   * few at open and one every several seconds after (client/server-clock.ts).
   */
  time: { socketBurst: 8, socketPerMinute: 30 },
} as const;

/** The close reason of a 1012: when to come back, so a draining gateway's crowd returns spread out. */
export interface RestartReason {
  retryAfterMs: number;
}

/** The `retryAfterMs` of a close reason (`{"retryAfterMs":N}`), or null. */
export function retryAfterOf(reason: string): number | null {
  if (!reason.startsWith('{')) return null;
  try {
    const r = JSON.parse(reason) as Partial<RestartReason> | null;
    return typeof r?.retryAfterMs === 'number' && r.retryAfterMs >= 0 ? r.retryAfterMs : null;
  } catch {
    return null; // not ours: a plain reconnect
  }
}
