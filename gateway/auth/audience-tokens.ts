// Audience tokens: HS256 JWTs minted for one layout (token-mint.ts) and verified with a cache
// (token-verify.ts), over one keyring and one set of imported signing keys. Their claims and the
// checks of their form are token-claims.ts and token-form.ts.
import type { AuthedKey } from './api-keys.js';
import { HmacKeys } from './hmac-keys.js';
import type { SigningKeyring } from './signing-keyring.js';
import type { AudienceClaims, Seat, TokenSettings } from './token-claims.js';
import { TokenMinter, type MintedToken } from './token-mint.js';
import { TokenVerifier, type KeyRevocations } from './token-verify.js';

export class AudienceTokens {
  private readonly minter: TokenMinter;
  private readonly verifier: TokenVerifier;

  constructor(
    settings: TokenSettings,
    keyring: SigningKeyring,
    revocations: KeyRevocations,
    now: () => number = Date.now,
    /** told of every cache lookup (metrics) */
    onCacheLookup: (hit: boolean) => void = () => {},
  ) {
    const hmacKeys = new HmacKeys();
    this.minter = new TokenMinter(settings, keyring, hmacKeys, now);
    this.verifier = new TokenVerifier(settings, keyring, hmacKeys, revocations, now, onCacheLookup);
  }

  /** A token for the layout on behalf of the key (in `zone` and at `seat`, if given), for a new participant. */
  mint(key: AuthedKey, layoutId: string, zone?: string, seat?: Seat): Promise<MintedToken> {
    return this.minter.mint(key, layoutId, zone, seat);
  }

  /** A new token for the participant of `claims` (from `renewable`), on behalf of the key. */
  renew(key: AuthedKey, claims: AudienceClaims): Promise<MintedToken> {
    return this.minter.renew(key, claims);
  }

  /** The claims of a token to renew (TokenVerifier.renewable). */
  renewable(token: string): Promise<AudienceClaims> {
    return this.verifier.renewable(token);
  }

  /** The claims of a valid token: synchronous when it is cached (TokenVerifier.verify). */
  verify(token: string): AudienceClaims | Promise<AudienceClaims> {
    return this.verifier.verify(token);
  }

  /** Whether this very token is cached. */
  known(token: string): boolean {
    return this.verifier.known(token);
  }
}
