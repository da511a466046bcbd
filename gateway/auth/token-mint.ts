// Minting an audience token: an HS256 JWT for one layout, signed with the keyring's current key. A
// renewal is a mint for the same participant (sub, zone and seat), with a new iat and exp.
import { randomBytes } from 'node:crypto';
import { SignJWT } from 'jose';
import type { AuthedKey } from './api-keys.js';
import type { HmacKeys } from './hmac-keys.js';
import type { SigningKeyring } from './signing-keyring.js';
import { TOKEN_TYP, routeKey, type AudienceClaims, type Seat, type TokenSettings } from './token-claims.js';

export interface MintedToken {
  token: string;
  /** ms since the epoch */
  expiresAt: number;
}

export class TokenMinter {
  constructor(
    private readonly settings: Pick<TokenSettings, 'issuer' | 'audience' | 'ttlSeconds'>,
    private readonly keyring: SigningKeyring,
    private readonly hmacKeys: HmacKeys,
    private readonly now: () => number,
  ) {}

  /** A token for the layout on behalf of the key (in `zone` and at `seat`, if given); `sub` is a fresh random audience id. */
  mint(key: AuthedKey, layoutId: string, zone?: string, seat?: Seat): Promise<MintedToken> {
    return this.sign(key, layoutId, `aud_${randomBytes(12).toString('base64url')}`, zone, seat ?? null);
  }

  /**
   * A new token for the participant of `claims`, on behalf of the key: the same sub, zone and seat, a
   * new iat and exp. The claims come from a token checked as renewable (TokenVerifier.renewable).
   */
  renew(key: AuthedKey, claims: AudienceClaims): Promise<MintedToken> {
    return this.sign(key, claims.layoutId, claims.sub, claims.zone === '' ? undefined : claims.zone, claims.seat);
  }

  private async sign(key: AuthedKey, layoutId: string, sub: string, zone: string | undefined, seat: Seat | null): Promise<MintedToken> {
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
      .sign(await this.hmacKeys.of(secret));
    return { token, expiresAt: exp * 1000 };
  }
}
