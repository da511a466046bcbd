// An AudienceTokens' surroundings for unit tests, without Redis: one signing key, settings, a
// keyring filled in by hand, no revocations, and a token minted the way the gateway mints one.
import { SignJWT } from 'jose';
import { TOKEN_TYP } from '../../gateway/auth/token-claims.js';
import type { SigningKeyring } from '../../gateway/auth/signing-keyring.js';

export const secret = new Uint8Array(32).fill(7);
export const settings = { issuer: 'iss', audience: 'aud', ttlSeconds: 600, cacheMax: 10, renewGraceSeconds: 0 };
export const revocations = { isRevoked: () => false, trackTokenKey: () => Promise.resolve() };

/** A keyring holding one kid (sk_1) whose secret is `keySecret` (our class's interface, filled in by hand). */
export function keyring(keySecret: unknown = secret): SigningKeyring {
  return { status: () => 'active', secret: () => keySecret, signer: () => ({ kid: 'sk_1', secret }) } as unknown as SigningKeyring;
}

/** A token for layout `show`, signed with `secret` under kid sk_1, valid for 5 minutes. */
export async function mintToken(): Promise<string> {
  return new SignJWT({ layoutId: 'show', team: 'team_1', keyId: 'ak_1' })
    .setProtectedHeader({ alg: 'HS256', typ: TOKEN_TYP, kid: 'sk_1' })
    .setIssuer('iss')
    .setAudience('aud')
    .setSubject('aud_x')
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(secret);
}
