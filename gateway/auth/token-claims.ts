// What an audience token says (its claims, the participant's routing key and seat) and the
// revocation rule a layout applies to it: the contract every reader of a token shares, with no
// signing or verifying in it (those are token-mint.ts and token-verify.ts).
import { createHash } from 'node:crypto';

/** The JOSE `typ` header of audience tokens; verification requires it, so no other JWT passes for one. */
export const TOKEN_TYP = 'audience+jwt';

/**
 * A participant's routing key: 16 characters from its `sub`, first in every token's header. The
 * header's JSON then starts with 27 bytes that are the same in every token of the participant
 * (renewals included): the token's first TOKEN_ROUTE_CHARS characters, which a load balancer hashes
 * to keep the participant on one gateway process (deploy/nginx, deploy/haproxy).
 */
export function routeKey(sub: string): string {
  return createHash('sha256').update(sub).digest('base64url').slice(0, 16);
}
/** The characters at the start of a token that only its participant's routing key decides: base64url of `{"route":"<16>"`. */
export const TOKEN_ROUTE_CHARS = 36;
/** What those characters start with: base64url of `{"route":"`, less its last, partial character. */
export const TOKEN_ROUTE_START = 'eyJyb3V0ZSI6I';

export interface TokenSettings {
  issuer: string;
  audience: string;
  ttlSeconds: number;
  cacheMax: number;
  /** how long after its expiry a token may still be renewed */
  renewGraceSeconds: number;
}

/** What a verified token grants. */
export interface AudienceClaims {
  /** the audience id, fresh per minted token: the scope of an Idempotency-Key */
  sub: string;
  layoutId: string;
  team: string;
  keyId: string;
  kid: string;
  /** seconds since the epoch */
  exp: number;
  /** when it was minted, ms since the epoch (`mintedAt`; `iat` x 1000 for a token minted without it) */
  mintedAt: number;
  /** where the participant sits, one of the layout's zones ('' for none) */
  zone: string;
  /** where in its zone (0 to 1 each way), for light patterns; null for nowhere in particular */
  seat: Seat | null;
}

/** A participant's place in its zone (the token's `seat` claim). */
export interface Seat {
  x: number;
  y: number;
}

/** A seat claim as signed: within 0 to 1 each way, or none. */
export function seatOf(claim: unknown): Seat | null {
  if (typeof claim !== 'object' || claim === null) return null;
  const { x, y } = claim as Record<string, unknown>;
  return typeof x === 'number' && typeof y === 'number' && x >= 0 && x <= 1 && y >= 0 && y <= 1 ? { x, y } : null;
}

/** Whether a layout revoked this token: minted before its cut-off, or its participant revoked. */
export function revokedByLayout(c: Pick<AudienceClaims, 'sub' | 'mintedAt'>, layout: { tokensRevokedBefore: number; revokedSubs: ReadonlySet<string> }): boolean {
  return c.mintedAt < layout.tokensRevokedBefore || (layout.revokedSubs.size > 0 && layout.revokedSubs.has(c.sub));
}

/** Whether two readings of a layout revoke the same tokens (its cut-off and its revoked participants). */
export function sameRevocations(a: { tokensRevokedBefore: number; revokedSubs: ReadonlySet<string> }, b: { tokensRevokedBefore: number; revokedSubs: ReadonlySet<string> }): boolean {
  if (a.tokensRevokedBefore !== b.tokensRevokedBefore || a.revokedSubs.size !== b.revokedSubs.size) return false;
  for (const sub of b.revokedSubs) if (!a.revokedSubs.has(sub)) return false;
  return true;
}
