// Token verification classifies its errors where it catches them: jose's own errors are 401
// (token_invalid, token_expired); anything else (a bug, a broken key) is re-thrown, so it reaches
// the HTTP layer's 500 path and its log instead of passing for a bad token.
import { describe, expect, it } from 'vitest';
import { AudienceTokens } from '../../gateway/auth/audience-tokens.js';
import { AppError } from '../../gateway/errors.js';
import { keyring, mintToken, revocations, settings } from '../helpers/audience-token.js';

describe('token verification errors', () => {
  it('a jose error is 401 token_invalid (a wrong secret)', async () => {
    const tokens = new AudienceTokens(settings, keyring(new Uint8Array(32).fill(8)), revocations);
    await expect(tokens.verify(await mintToken())).rejects.toMatchObject({ code: 'token_invalid' });
  });

  it('anything else is re-thrown as it is (a key of the wrong type: a TypeError), not dressed as a bad token', async () => {
    const tokens = new AudienceTokens(settings, keyring('not bytes'), revocations);
    const e = await Promise.resolve(tokens.verify(await mintToken())).catch((err: unknown) => err);
    expect(e).not.toBeInstanceOf(AppError);
    expect(e).toBeInstanceOf(TypeError);
  });
});
