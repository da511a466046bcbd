// Token verification classifies its errors where it catches them: jose's own errors are 401
// (token_invalid, token_expired); anything else (a bug, a broken key) is re-thrown, so it reaches
// the HTTP layer's 500 path and its log instead of passing for a bad token.
import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { AudienceTokens, TOKEN_TYP } from '../../gateway/auth/audience-tokens.js';
import { AppError } from '../../gateway/errors.js';
import type { SigningKeyring } from '../../gateway/auth/signing-keyring.js';

const secret = new Uint8Array(32).fill(7);
const settings = { issuer: 'iss', audience: 'aud', ttlSeconds: 600, cacheMax: 10 };
const revocations = { isRevoked: () => false, trackTokenKey: () => Promise.resolve() };

/** A keyring holding one kid whose secret is `keySecret` (our class's interface, filled in by hand). */
function keyring(keySecret: unknown): SigningKeyring {
  return { status: () => 'active', secret: () => keySecret, signer: () => ({ kid: 'sk_1', secret }) } as unknown as SigningKeyring;
}

async function token(): Promise<string> {
  return new SignJWT({ layoutId: 'show', team: 'team_1', keyId: 'ak_1' })
    .setProtectedHeader({ alg: 'HS256', typ: TOKEN_TYP, kid: 'sk_1' })
    .setIssuer('iss')
    .setAudience('aud')
    .setSubject('aud_x')
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(secret);
}

describe('token verification errors', () => {
  it('a jose error is 401 token_invalid (a wrong secret)', async () => {
    const tokens = new AudienceTokens(settings, keyring(new Uint8Array(32).fill(8)), revocations);
    await expect(tokens.verify(await token())).rejects.toMatchObject({ code: 'token_invalid' });
  });

  it('anything else is re-thrown as it is (a key of the wrong type: a TypeError), not dressed as a bad token', async () => {
    const tokens = new AudienceTokens(settings, keyring('not bytes'), revocations);
    const e = await Promise.resolve(tokens.verify(await token())).catch((err: unknown) => err);
    expect(e).not.toBeInstanceOf(AppError);
    expect(e).toBeInstanceOf(TypeError);
  });
});
