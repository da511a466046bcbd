// Verifying an audience token, with a cache. jose's jwtVerify costs far more CPU than a lookup (what
// each costs: docs/configuration.md, measured by bench/token-cache.ts, a probe now only in git history), so a verified token is kept
// (bounded LRU) and each hit only re-checks what can change after verification: expiry, the minting
// key's revocation and the signing key's retirement.
//
// The cache is keyed by a 32-bit fingerprint of the whole token (a number: no string to slice, hash
// and compare per lookup), and an entry keeps the token's signature (43 characters) rather than the
// whole token (about 370), which keeps an entry small. A hit needs both: the presented token's
// fingerprint finds the entry, and it must end in the entry's signature. A token whose fingerprint
// is cached but whose signature differs (a tampered or forged token, or another token that happens
// to share the fingerprint) is a miss and goes to jose. A string crafted to match both would only
// ever get the claims of the token it copied the signature from (claims come from the cache, never
// from the presented payload), which its holder could already use: a cache hit never grants
// anything a verified token did not. Two live tokens with one fingerprint take turns in the cache,
// each verified by jose when the other replaced it.
import { decodeProtectedHeader, errors as joseErrors, jwtVerify } from 'jose';
import { LRUCache } from 'lru-cache';
import { AppError } from '../errors.js';
import type { HmacKeys } from './hmac-keys.js';
import type { SigningKeyring } from './signing-keyring.js';
import { TOKEN_TYP, seatOf, type AudienceClaims, type TokenSettings } from './token-claims.js';
import { Interner, endsInSignature, flatCopy, isCanonicalJws, signatureOf, tokenFingerprint } from './token-form.js';

/**
 * What the cache keeps of a verified token: its claims and, beside them, its signature. One object,
 * not claims inside a wrapper: a gateway with 100,000 tokens cached was about 5 MiB smaller (132.0
 * and 133.6 MiB resident against 137.3 to 139.7, 2026-11-23).
 */
interface CachedToken extends AudienceClaims {
  /** the token's signature segment: a token found by its fingerprint must end in it */
  readonly signature: string;
}

/** Which API keys are revoked (checked on every verification), told of each new token's key (to re-check it). */
export interface KeyRevocations {
  isRevoked(keyId: string): boolean;
  trackTokenKey(keyId: string): Promise<void>;
}

export class TokenVerifier {
  /** verified tokens by tokenFingerprint (as a signed 32-bit number, which V8 keeps unboxed) */
  private readonly cache: LRUCache<number, CachedToken> | null;
  private readonly interned = new Interner();

  constructor(
    private readonly settings: Pick<TokenSettings, 'issuer' | 'audience' | 'cacheMax' | 'renewGraceSeconds'>,
    private readonly keyring: SigningKeyring,
    private readonly hmacKeys: HmacKeys,
    private readonly revocations: KeyRevocations,
    private readonly now: () => number,
    /** told of every cache lookup (metrics) */
    private readonly onCacheLookup: (hit: boolean) => void,
  ) {
    this.cache = settings.cacheMax > 0 ? new LRUCache({ max: settings.cacheMax }) : null;
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
      const { payload } = await jwtVerify(token, await this.hmacKeys.of(secret), {
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
