// Audience tokens: HS256 JWTs minted for one layout, verified with a cache. jose's jwtVerify costs
// about 110 us of CPU here and a hit about 1 (npm run bench:token-cache), so a verified token is
// kept (bounded LRU) and each hit only re-checks what can change after verification: expiry, the
// minting key's revocation and the signing key's retirement.
//
// The cache is keyed by a 32-bit fingerprint of the whole token (a number: no string to slice, hash
// and compare per lookup), and an entry keeps the token's signature (43 characters) rather than the
// whole token (about 370), which keeps an entry near 250 bytes of heap (100k live tokens: about 25
// MB). A hit needs both: the presented token's fingerprint finds the entry, and it must end in the
// entry's signature. A token whose fingerprint is cached but whose signature differs (a tampered or
// forged token, or another token that happens to share the fingerprint) is a miss and goes to jose.
// A string crafted to match both would only ever get the claims of the token it copied the
// signature from (claims come from the cache, never from the presented payload), which its holder
// could already use: a cache hit never grants anything a verified token did not. Two live tokens
// with one fingerprint (about one pair in 100,000 tokens) take turns in the cache, each verified by
// jose when the other replaced it.
import { createHash, randomBytes, webcrypto } from 'node:crypto';
import { SignJWT, decodeProtectedHeader, errors as joseErrors, jwtVerify } from 'jose';
import { LRUCache } from 'lru-cache';
import { AppError } from '../errors.js';
import type { AuthedKey } from './api-keys.js';
import type { SigningKeyring } from './signing-keyring.js';

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
function seatOf(claim: unknown): Seat | null {
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

/**
 * What the cache keeps of a verified token: its claims and, beside them, its signature. One object,
 * not claims inside a wrapper: a gateway with 100,000 tokens cached was about 5 MiB smaller (132.0
 * and 133.6 MiB resident against 137.3 to 139.7, 2026-11-23).
 */
interface CachedToken extends AudienceClaims {
  /** the token's signature segment: a token found by its fingerprint must end in it */
  readonly signature: string;
}

/** Where a token's UTF-8 bytes are read four at a time (its own ArrayBuffer, so the words are aligned). */
const scratch = Buffer.alloc(16 * 1024);
const words = new Int32Array(scratch.buffer, scratch.byteOffset, scratch.length >>> 2);

/**
 * A 32-bit fingerprint of the token: FNV-1a's step over its UTF-8 bytes, a 32-bit word at a time.
 * A character at a time took about 1 µs a request under load (a quarter of that this way). A hit
 * is compared with a verified token, which is ASCII, and only the very same string has the same
 * UTF-8 bytes as an ASCII one.
 */
export function tokenFingerprint(token: string): number {
  const n = scratch.write(token, 0, 'utf8');
  if (n > scratch.length - 4) return charFingerprint(token); // far longer than a header uWS accepts
  let h = 0x811c9dc5 ^ n;
  const full = n >>> 2;
  for (let i = 0; i < full; i++) h = Math.imul(h ^ words[i]!, 0x01000193);
  for (let i = full << 2; i < n; i++) h = Math.imul(h ^ scratch[i]!, 0x01000193);
  return h >>> 0;
}

/** The same step a UTF-16 code unit at a time, for a string that does not fit the scratch. */
function charFingerprint(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** The signature segment of a JWS compact token ('' if there is none), copied so it does not keep the whole header string alive. */
function signatureOf(token: string): string {
  const dot = token.lastIndexOf('.');
  return dot < 0 ? '' : token.slice(dot + 1);
}

/** True when `signature` is the token's last segment (what follows its last dot): a signature holds no dot. */
function endsInSignature(token: string, signature: string): boolean {
  return token.endsWith(signature) && token.charCodeAt(token.length - signature.length - 1) === 46;
}

/** Value of each base64url character (-1: not one). */
const B64URL = new Int8Array(128).fill(-1);
for (const [i, c] of [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'].entries()) B64URL[c.charCodeAt(0)] = i;

/**
 * True when every segment of a compact JWS is canonical base64url: only its 64 characters, no
 * padding, no length of 1 mod 4, and the unused low bits of a last character zero. jose decodes
 * leniently, so without this one token has many spellings that all verify and each miss the cache.
 */
export function isCanonicalJws(token: string): boolean {
  let segments = 1;
  let length = 0;
  for (let i = 0; i <= token.length; i++) {
    const code = i < token.length ? token.charCodeAt(i) : 46; // the end closes the last segment like a dot
    if (code === 46) {
      const rest = length % 4;
      if (length === 0 || rest === 1) return false;
      if (rest !== 0 && (B64URL[token.charCodeAt(i - 1)]! & (rest === 2 ? 0x0f : 0x03)) !== 0) return false;
      if (i < token.length && ++segments > 3) return false;
      length = 0;
    } else if (code > 127 || B64URL[code]! < 0) return false;
    else length++;
  }
  return segments === 3;
}

/** A flat copy: V8 keeps a long substring as a view of its parent string, which would keep the header alive in the cache. */
function flatCopy(s: string): string {
  return Buffer.from(s, 'latin1').toString('latin1');
}

/** The few distinct claim values (layouts, teams, keys, kids) shared by all cached tokens. */
class Interner {
  private readonly values = new Map<string, string>();
  of(s: string): string {
    const known = this.values.get(s);
    if (known !== undefined) return known;
    if (this.values.size > 100_000) this.values.clear();
    this.values.set(s, s);
    return s;
  }
}

export class AudienceTokens {
  /** verified tokens by tokenFingerprint (as a signed 32-bit number, which V8 keeps unboxed) */
  private readonly cache: LRUCache<number, CachedToken> | null;
  private readonly interned = new Interner();
  /** each signing secret as a WebCrypto key, imported once: given the raw bytes, jose imports them on every signature and verification */
  private readonly hmacKeys = new WeakMap<Uint8Array, Promise<webcrypto.CryptoKey>>();

  constructor(
    private readonly settings: TokenSettings,
    private readonly keyring: SigningKeyring,
    /** which API keys are revoked (checked on every verification), told of each new token's key (to re-check it) */
    private readonly revocations: { isRevoked(keyId: string): boolean; trackTokenKey(keyId: string): Promise<void> },
    private readonly now: () => number = Date.now,
    /** told of every cache lookup (metrics) */
    private readonly onCacheLookup: (hit: boolean) => void = () => {},
  ) {
    this.cache = settings.cacheMax > 0 ? new LRUCache({ max: settings.cacheMax }) : null;
  }

  /** A token for the layout on behalf of the key (in `zone` and at `seat`, if given); `sub` is a fresh random audience id. */
  mint(key: AuthedKey, layoutId: string, zone?: string, seat?: Seat): Promise<{ token: string; expiresAt: number }> {
    return this.sign(key, layoutId, `aud_${randomBytes(12).toString('base64url')}`, zone, seat ?? null);
  }

  /**
   * A new token for the participant of `old`, on behalf of the key: the same sub, zone and seat, a new
   * iat and exp. `old` must carry a valid signature for `layoutId` and may have expired up to the
   * renewal grace ago; whether it is revoked is the caller's to check (`renewable` gives its claims).
   */
  async renew(key: AuthedKey, claims: AudienceClaims): Promise<{ token: string; expiresAt: number }> {
    return this.sign(key, claims.layoutId, claims.sub, claims.zone === '' ? undefined : claims.zone, claims.seat);
  }

  /**
   * The claims of a token to renew: signed by a signing key still known (token_invalid; one retired
   * is token_revoked), minted by a key not revoked (token_revoked), and expired no longer than the
   * grace ago (token_expired). Never cached: a renewal is rare, and an expired token has no place there.
   */
  async renewable(token: string): Promise<AudienceClaims> {
    if (!isCanonicalJws(token)) throw new AppError('token_invalid');
    const claims = await this.verifySignature(token, this.settings.renewGraceSeconds);
    await this.revocations.trackTokenKey(claims.keyId);
    if (this.revocations.isRevoked(claims.keyId)) throw new AppError('token_revoked');
    return claims;
  }

  private async sign(key: AuthedKey, layoutId: string, sub: string, zone: string | undefined, seat: Seat | null): Promise<{ token: string; expiresAt: number }> {
    const { kid, secret } = this.keyring.signer();
    const mintedAt = this.now();
    const iat = Math.floor(mintedAt / 1000);
    const exp = iat + this.settings.ttlSeconds;
    // `mintedAt` (ms) beside `iat` (whole seconds): a layout's revocation cut-off must tell apart
    // tokens minted in the same second before and after it
    const token = await new SignJWT({ layoutId, team: key.teamId, keyId: key.keyId, mintedAt, ...(zone !== undefined && { zone }), ...(seat && { seat: { x: seat.x, y: seat.y } }) })
      .setProtectedHeader({ route: routeKey(sub), alg: 'HS256', typ: TOKEN_TYP, kid })
      .setIssuer(this.settings.issuer)
      .setAudience(this.settings.audience)
      .setSubject(sub)
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .sign(await this.hmacKey(secret));
    return { token, expiresAt: exp * 1000 };
  }

  /**
   * The claims of a valid token, or AppError token_invalid / token_expired / token_revoked. A cached
   * token is answered synchronously (the request path then needs no promise); a new one is verified
   * with jose (asynchronous) and cached.
   */
  verify(token: string): AudienceClaims | Promise<AudienceClaims> {
    const key = tokenFingerprint(token) | 0;
    const cached = this.cache?.get(key);
    // A hit is the very string that was verified (its fingerprint and signature), so it was canonical then.
    const hit = cached !== undefined && endsInSignature(token, cached.signature);
    this.onCacheLookup(hit);
    if (hit) return this.recheck(key, cached);
    if (!isCanonicalJws(token)) throw new AppError('token_invalid');
    return this.verifySignature(token).then(async (entry) => {
      await this.revocations.trackTokenKey(entry.keyId);
      this.cache?.set(key, entry);
      return this.recheck(key, entry);
    });
  }

  /** Whether this very token is cached (verify would answer it without jose); the cache's order is left as it is. */
  known(token: string): boolean {
    const cached = this.cache?.peek(tokenFingerprint(token) | 0);
    return cached !== undefined && endsInSignature(token, cached.signature);
  }

  private recheck(key: number, c: AudienceClaims): AudienceClaims {
    if (c.exp * 1000 <= this.now()) {
      this.cache?.delete(key);
      throw new AppError('token_expired');
    }
    if (this.revocations.isRevoked(c.keyId) || this.keyring.status(c.kid) !== 'active') throw new AppError('token_revoked');
    return c;
  }

  /** The secret's imported key; a secret that is not bytes (a broken keyring) throws a TypeError before anything is imported or kept. */
  private hmacKey(secret: Uint8Array): Promise<webcrypto.CryptoKey> {
    if (!(secret instanceof Uint8Array)) throw new TypeError(`a signing secret is bytes, not ${typeof secret}`);
    let key = this.hmacKeys.get(secret);
    if (key === undefined) {
      key = webcrypto.subtle.importKey('raw', secret, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
      this.hmacKeys.set(secret, key);
    }
    return key;
  }

  /** The verified token's claims, with its signature: the cache's entry as it is kept. `graceSeconds`: past its exp too, by up to this. */
  private async verifySignature(token: string, graceSeconds = 0): Promise<CachedToken> {
    let kid: string | undefined;
    try {
      kid = decodeProtectedHeader(token).kid;
    } catch (e) {
      if (e instanceof joseErrors.JOSEError) throw new AppError('token_invalid');
      throw e;
    }
    const status = this.keyring.status(kid);
    if (status === 'retired') throw new AppError('token_revoked');
    const secret = kid === undefined ? undefined : this.keyring.secret(kid);
    if (status === 'unknown' || !secret || kid === undefined) throw new AppError('token_invalid');
    try {
      const { payload } = await jwtVerify(token, await this.hmacKey(secret), {
        algorithms: ['HS256'],
        typ: TOKEN_TYP,
        issuer: this.settings.issuer,
        audience: this.settings.audience,
        requiredClaims: ['exp', 'iat', 'sub'],
        currentDate: new Date(this.now()),
        ...(graceSeconds > 0 && { clockTolerance: graceSeconds }),
      });
      const { sub, layoutId, team, keyId, exp, iat, mintedAt, zone, seat } = payload;
      if (typeof sub !== 'string' || typeof layoutId !== 'string' || typeof team !== 'string' || typeof keyId !== 'string' || typeof exp !== 'number' || typeof iat !== 'number') {
        throw new AppError('token_invalid');
      }
      const minted = typeof mintedAt === 'number' ? mintedAt : iat * 1000;
      // The few distinct values are shared by every cached token, which keeps each entry small. One
      // object literal: a spread of the claims into the entry took about 40 MiB more for 100,000 tokens.
      const i = this.interned;
      return { sub: flatCopy(sub), layoutId: i.of(layoutId), team: i.of(team), keyId: i.of(keyId), kid: i.of(kid), exp, mintedAt: minted, zone: typeof zone === 'string' ? i.of(zone) : '', seat: seatOf(seat), signature: flatCopy(signatureOf(token)) };
    } catch (e) {
      // classified here, by jose's own error classes; anything else is a bug for the 500 path and its log
      if (e instanceof joseErrors.JWTExpired) throw new AppError('token_expired');
      if (e instanceof joseErrors.JOSEError) throw new AppError('token_invalid');
      throw e;
    }
  }
}
