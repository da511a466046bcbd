// The verified-token cache is keyed by a token's 32-bit fingerprint; a hit also needs the presented
// token to end in the cached token's signature. A fingerprint is easy to collide on purpose (FNV-1a
// is invertible a word at a time), so this forges a token with a cached token's fingerprint and
// another signature: it must go to jose and be refused, never be answered from the cache.
import { describe, expect, it } from 'vitest';
import { AudienceTokens } from '../../gateway/auth/audience-tokens.js';
import { tokenFingerprint } from '../../gateway/auth/token-form.js';
import { keyring, mintToken, revocations, settings } from '../helpers/audience-token.js';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const PRIME = 0x01000193;

/** PRIME's inverse mod 2^32 (Newton's iteration), to run an FNV step backwards. */
function inverse(p: number): number {
  let x = p;
  for (let i = 0; i < 5; i++) x = Math.imul(x, 2 - Math.imul(p, x));
  return x;
}

/** The word (4 ASCII bytes, little-endian) of `s` at byte `at`. */
const wordAt = (s: string, at: number) => (s.charCodeAt(at) | (s.charCodeAt(at + 1) << 8) | (s.charCodeAt(at + 2) << 16) | (s.charCodeAt(at + 3) << 24)) | 0;

/**
 * Another token with the same fingerprint: two aligned words inside the signature replaced, the
 * first at random, the second solved for from both ends of tokenFingerprint's steps, until the
 * solution is four base64url characters (about one try in 256). Its last character is kept, so it
 * stays canonical base64url.
 */
function collide(token: string, seed = 1): string {
  const n = token.length;
  const a = Math.ceil((token.lastIndexOf('.') + 1) / 4) * 4;
  const b = a + 4;
  expect(b + 4).toBeLessThan(n);
  let h = 0x811c9dc5 ^ n;
  for (let i = 0; i < a; i += 4) h = Math.imul(h ^ wordAt(token, i), PRIME);
  // backwards from the fingerprint to the state just after word b
  let after = tokenFingerprint(token) | 0;
  const full = n >>> 2;
  for (let i = n - 1; i >= full << 2; i--) after = Math.imul(after, inverse(PRIME)) ^ token.charCodeAt(i);
  for (let i = (full - 1) << 2; i > b; i -= 4) after = Math.imul(after, inverse(PRIME)) ^ wordAt(token, i);
  let state = seed;
  const random = () => (state = Math.imul(state ^ (state >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
  for (let tries = 0; tries < 1_000_000; tries++) {
    const first = Array.from({ length: 4 }, () => ALPHABET[random() % 64]).join('');
    const beforeB = Math.imul(h ^ wordAt(first, 0), PRIME);
    const w = Math.imul(after, inverse(PRIME)) ^ beforeB;
    const second = String.fromCharCode(w & 255, (w >>> 8) & 255, (w >>> 16) & 255, (w >>> 24) & 255);
    if ([...second].every((c) => ALPHABET.includes(c))) return token.slice(0, a) + first + second + token.slice(b + 4);
  }
  throw new Error('no collision found');
}

describe('the verified-token cache', () => {
  it('refuses a token forged to have a cached token fingerprint but another signature, and keeps the cached one', async () => {
    const lookups: boolean[] = [];
    const tokens = new AudienceTokens(settings, keyring(), revocations, Date.now, (hit) => lookups.push(hit));
    const token = await mintToken();
    expect((await tokens.verify(token)).layoutId).toBe('show'); // verified by jose, now cached
    const forged = collide(token);
    expect(forged).not.toBe(token);
    expect(forged.length).toBe(token.length);
    expect(tokenFingerprint(forged)).toBe(tokenFingerprint(token));
    await expect(Promise.resolve().then(() => tokens.verify(forged))).rejects.toMatchObject({ code: 'token_invalid' });
    expect(tokens.verify(token)).toMatchObject({ layoutId: 'show' }); // answered from the cache, synchronously
    expect(lookups).toEqual([false, false, true]);
  });
});
