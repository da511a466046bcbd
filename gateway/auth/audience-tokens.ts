// Audience tokens: HS256 JWTs minted for one layout, verified with a cache. jose's jwtVerify costs
// about 50 us here, so a verified token is kept (bounded LRU) and each hit only re-checks what can
// change after verification: expiry, the minting key's revocation and the signing key's retirement.
import { randomBytes } from 'node:crypto';
import { SignJWT, decodeProtectedHeader, errors as joseErrors, jwtVerify } from 'jose';
import { LRUCache } from 'lru-cache';
import { AppError } from '../errors.js';
import type { AuthedKey } from './api-keys.js';
import type { SigningKeyring } from './signing-keyring.js';

/** The JOSE `typ` header of audience tokens; verification requires it, so no other JWT passes for one. */
export const TOKEN_TYP = 'audience+jwt';

export interface TokenSettings {
  issuer: string;
  audience: string;
  ttlSeconds: number;
  cacheMax: number;
}

/** What a verified token grants (its `sub`, the audience id, is checked but not needed afterwards). */
export interface AudienceClaims {
  layoutId: string;
  team: string;
  keyId: string;
  kid: string;
  /** seconds since the epoch */
  exp: number;
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
  private readonly cache: LRUCache<string, AudienceClaims> | null;
  private readonly interned = new Interner();

  constructor(
    private readonly settings: TokenSettings,
    private readonly keyring: SigningKeyring,
    private readonly isKeyRevoked: (keyId: string) => boolean,
    private readonly now: () => number = Date.now,
    /** told of every cache lookup (metrics) */
    private readonly onCacheLookup: (hit: boolean) => void = () => {},
  ) {
    this.cache = settings.cacheMax > 0 ? new LRUCache({ max: settings.cacheMax }) : null;
  }

  /** A token for the layout on behalf of the key; `sub` is a fresh random audience id. */
  async mint(key: AuthedKey, layoutId: string): Promise<{ token: string; expiresAt: number }> {
    const { kid, secret } = this.keyring.signer();
    const iat = Math.floor(this.now() / 1000);
    const exp = iat + this.settings.ttlSeconds;
    const token = await new SignJWT({ layoutId, team: key.teamId, keyId: key.keyId })
      .setProtectedHeader({ alg: 'HS256', typ: TOKEN_TYP, kid })
      .setIssuer(this.settings.issuer)
      .setAudience(this.settings.audience)
      .setSubject(`aud_${randomBytes(12).toString('base64url')}`)
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .sign(secret);
    return { token, expiresAt: exp * 1000 };
  }

  /**
   * The claims of a valid token, or AppError token_invalid / token_expired / token_revoked. A cached
   * token is answered synchronously (the request path then needs no promise); a new one is verified
   * with jose (asynchronous) and cached.
   */
  verify(token: string): AudienceClaims | Promise<AudienceClaims> {
    const cached = this.cache?.get(token);
    this.onCacheLookup(cached !== undefined);
    if (cached) return this.recheck(token, cached);
    return this.verifySignature(token).then((claims) => {
      this.cache?.set(token, claims);
      return this.recheck(token, claims);
    });
  }

  private recheck(token: string, c: AudienceClaims): AudienceClaims {
    if (c.exp * 1000 <= this.now()) {
      this.cache?.delete(token);
      throw new AppError('token_expired');
    }
    if (this.isKeyRevoked(c.keyId) || this.keyring.status(c.kid) !== 'active') throw new AppError('token_revoked');
    return c;
  }

  private async verifySignature(token: string): Promise<AudienceClaims> {
    let kid: string | undefined;
    try {
      kid = decodeProtectedHeader(token).kid;
    } catch {
      throw new AppError('token_invalid');
    }
    const status = this.keyring.status(kid);
    if (status === 'retired') throw new AppError('token_revoked');
    const secret = kid === undefined ? undefined : this.keyring.secret(kid);
    if (status === 'unknown' || !secret || kid === undefined) throw new AppError('token_invalid');
    try {
      const { payload } = await jwtVerify(token, secret, {
        algorithms: ['HS256'],
        typ: TOKEN_TYP,
        issuer: this.settings.issuer,
        audience: this.settings.audience,
        requiredClaims: ['exp', 'iat', 'sub'],
        currentDate: new Date(this.now()),
      });
      const { sub, layoutId, team, keyId, exp } = payload;
      if (typeof sub !== 'string' || typeof layoutId !== 'string' || typeof team !== 'string' || typeof keyId !== 'string' || typeof exp !== 'number') {
        throw new AppError('token_invalid');
      }
      // The few distinct values are shared by every cached token, which keeps each entry small.
      const i = this.interned;
      return { layoutId: i.of(layoutId), team: i.of(team), keyId: i.of(keyId), kid: i.of(kid), exp };
    } catch (e) {
      if (e instanceof joseErrors.JWTExpired) throw new AppError('token_expired');
      if (e instanceof AppError) throw e;
      throw new AppError('token_invalid');
    }
  }
}
