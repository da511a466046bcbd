// Every error the gateway and audiencectl report: a stable code (schemas/error-codes.ts), its HTTP
// status and a default message. Callers switch on `code`; docs/api.md's error table lists each one
// (a test keeps them in step).
import type { ErrorCode } from '../schemas/error-codes.js';

export type { ErrorCode };

export const ERRORS = {
  // request shape
  invalid_json: { status: 400, message: 'The request body is not valid JSON.' },
  invalid_request: { status: 400, message: 'The request is framed ambiguously (several Content-Length headers).' },
  invalid_body: { status: 400, message: 'The request body does not match the schema.' },
  unsupported_media_type: { status: 415, message: 'Send the body as Content-Type: application/json.' },
  body_too_large: { status: 413, message: 'The request body is larger than the limit.' },
  not_found: { status: 404, message: 'No such route.' },
  method_not_allowed: { status: 405, message: 'That method is not allowed on this route.' },
  protocol_missing: { status: 400, message: 'Offer the subprotocol audience-control.v1 (and the token as bearer.<token>).' },
  upgrade_invalid: { status: 400, message: 'A WebSocket upgrade sends Connection: Upgrade (RFC 6455).' },
  origin_not_allowed: { status: 403, message: 'This origin may not make this request from a browser.' },
  // API keys (x-api-key)
  api_key_missing: { status: 401, message: 'Send the API key in the x-api-key header.' },
  api_key_invalid: { status: 401, message: 'The API key is malformed, unknown or wrong.' },
  api_key_revoked: { status: 401, message: 'The API key has been revoked.' },
  // audience tokens (Authorization: Bearer)
  token_missing: { status: 401, message: 'Send the audience token as Authorization: Bearer <token>.' },
  token_invalid: { status: 401, message: 'The audience token is malformed, tampered with, or signed with an unknown key.' },
  token_expired: { status: 401, message: 'The audience token has expired; mint a new one.' },
  token_revoked: { status: 401, message: 'The audience token was revoked: by its layout (end of show, or this participant), or with the API key that minted it, or its signing key was retired.' },
  token_layout_mismatch: { status: 401, message: 'The audience token was minted for another layout.' },
  token_mismatch: { status: 400, message: 'The new token is of another participant or layout; the live socket keeps its token.' },
  // layouts and actions
  layout_not_found: { status: 404, message: 'No such layout for this API key.' },
  control_not_found: { status: 400, message: 'No control with this lid on the layout\'s active page.' },
  zone_not_found: { status: 400, message: 'The layout declares no such zone.' },
  light_canvas_missing: { status: 400, message: 'The layout declares no light canvas (its definition has no light).' },
  type_mismatch: { status: 400, message: 'The action type differs from the control\'s type.' },
  invalid_value: { status: 400, message: 'The value does not fit the control.' },
  idempotency_key_invalid: { status: 400, message: 'Idempotency-Key must be 1 to 64 of A-Z a-z 0-9 . _ : -' },
  idempotency_key_reused: { status: 409, message: 'This Idempotency-Key was used for another action; use a new key for a new action.' },
  moderated: { status: 400, message: 'The text was refused by the control\'s moderation.' },
  rate_limited: { status: 429, message: 'Too many requests; wait as Retry-After says.' },
  // availability
  unavailable: { status: 503, message: 'The service cannot reach its data store; try again shortly.' },
  internal: { status: 500, message: 'Unexpected error.' },
  // team management (admin API)
  login_failed: { status: 401, message: 'The email or the password is wrong.' },
  too_many_attempts: { status: 429, message: 'Too many failed sign-ins; wait before trying again.' },
  session_required: { status: 401, message: 'Sign in first (no session, or it has expired).' },
  csrf_failed: { status: 403, message: 'The x-csrf-token header is missing or does not match the session.' },
  admin_exists: { status: 409, message: 'An administrator with that email already exists.' },
  admin_not_found: { status: 404, message: 'No administrator with that email.' },
  // control plane (audiencectl, admin API)
  invalid_argument: { status: 400, message: 'An argument is missing or invalid.' },
  invalid_layout: { status: 400, message: 'The layout definition is invalid.' },
  team_not_found: { status: 404, message: 'No such team.' },
  layout_owned_by_other_team: { status: 409, message: 'That layoutId belongs to another team.' },
  page_not_found: { status: 404, message: 'No such page in the layout.' },
  cue_not_found: { status: 404, message: 'No control with a crowd cue at this lid in the layout.' },
  item_not_found: { status: 404, message: 'No such held text in the layout\'s moderation queue (never held, or expired).' },
  key_not_found: { status: 404, message: 'No such API key.' },
  signing_key_not_found: { status: 404, message: 'No such signing key.' },
  signing_key_in_use: { status: 409, message: 'That signing key is the current one; rotate first, then retire it.' },
} as const satisfies Record<ErrorCode, { status: number; message: string }>;

/** An error with a stable code; the HTTP layer turns it into `{success:false, error:{code,message}}`. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** headers the error reply carries (Retry-After on 429) */
  readonly headers: readonly (readonly [string, string])[];
  /** `status` overrides the table's only where the spec fixes another (POST /token's 400 layout_not_found). */
  constructor(code: ErrorCode, message?: string, status?: number, headers: readonly (readonly [string, string])[] = []) {
    super(message ?? ERRORS[code].message);
    this.name = 'AppError';
    this.code = code;
    this.status = status ?? ERRORS[code].status;
    this.headers = headers;
  }
}

/** A Redis failure (refused, timed out, not connected) is always `unavailable`, never a 500. */
export function unavailable(cause: unknown): AppError {
  const e = new AppError('unavailable');
  e.cause = cause;
  return e;
}

/** ioredis errors that mean Redis cannot be reached or cannot serve right now (by name). */
const OUTAGE_ERRORS = new Set(['MaxRetriesPerRequestError', 'AbortError', 'ClusterAllFailedError']);
/** ...and by message: connection states, timeouts, and the replies of a Redis that is starting, failing over or blocked. */
const OUTAGE_MESSAGE =
  /Connection is closed|Stream isn't writeable|enableOfflineQueue|isn't ready|Command timed out|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EHOSTUNREACH|None of startup nodes|Too many Cluster redirections|^(LOADING|BUSY|CLUSTERDOWN|TRYAGAIN|MASTERDOWN|READONLY|NOREPLICAS|MOVED|ASK|OOM|MISCONF) /;

/** The reply prefixes of a Redis that is up but refuses writes, and the reason each is counted as. */
const WRITE_REFUSALS: readonly (readonly [RegExp, WriteRefusal])[] = [
  [/^OOM /, 'oom'],
  [/^MISCONF /, 'misconf'],
  [/^READONLY /, 'readonly'],
  [/^NOREPLICAS /, 'noreplicas'],
];
export type WriteRefusal = 'oom' | 'misconf' | 'readonly' | 'noreplicas';

/**
 * Why Redis refused a write, when it is up but refuses them (used memory past maxmemory, a failed
 * snapshot with stop-writes-on-bgsave-error, a replica, too few replicas), or null for any other
 * error. Takes an error or a reply's error text (a script's pcall reports one as text).
 */
export function writeRefusal(e: unknown): WriteRefusal | null {
  const message = e instanceof Error ? e.message : typeof e === 'string' ? e : '';
  for (const [prefix, reason] of WRITE_REFUSALS) if (prefix.test(message)) return reason;
  return null;
}

/**
 * True for an error that says Redis is away or cannot serve now (503, retry later). False for
 * everything else (a script error on corrupt data, a bug): those are 500 `internal`, logged.
 */
export function isRedisOutage(e: unknown): boolean {
  if (!(e instanceof Error)) return false;
  return OUTAGE_ERRORS.has(e.name) || OUTAGE_MESSAGE.test(e.message);
}

/**
 * Awaits a data-store call: a Redis outage becomes `unavailable` (503); an AppError passes; anything
 * else is re-thrown as it is, to the HTTP layer's one place that logs it and answers 500 `internal`.
 */
export async function orUnavailable<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (e) {
    throw e instanceof AppError || !isRedisOutage(e) ? e : unavailable(e);
  }
}
