// The verified-token cache is keyed by a token's fingerprint; a hit also needs the presented token to
// end in the verified one's signature. The fingerprint must tell apart any change of the token.
import { describe, expect, it } from 'vitest';
import { tokenFingerprint } from '../../gateway/auth/token-form.js';

const TOKEN =
  'eyJhbGciOiJIUzI1NiIsInR5cCI6ImF1ZGllbmNlK2p3dCIsImtpZCI6ImsxIn0.eyJsYXlvdXRJZCI6ImRlbW8tc2hvdyIsInRlYW0iOiJ0ZWFtXzEiLCJrZXlJZCI6ImtleV8xIiwic3ViIjoiYXVkX2FiY2RlZmdoaWprbG1ub3AiLCJpYXQiOjE3MDAwMDAwMDAsImV4cCI6MTcwMDAwMzYwMH0.c2lnbmF0dXJlLXNpZ25hdHVyZS1zaWduYXR1cmUtc2ln';
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

describe('tokenFingerprint', () => {
  it('is the same for the same text, however the string was made', () => {
    const sliced = `Bearer ${TOKEN}`.slice(7);
    const joined = TOKEN.slice(0, 100) + TOKEN.slice(100);
    expect(tokenFingerprint(sliced)).toBe(tokenFingerprint(TOKEN));
    expect(tokenFingerprint(joined)).toBe(tokenFingerprint(TOKEN));
  });

  it('changes with any one character changed, at every position, and with the length', () => {
    const base = tokenFingerprint(TOKEN);
    for (let i = 0; i < TOKEN.length; i++) {
      for (const c of [ALPHABET[(ALPHABET.indexOf(TOKEN[i]!) + 1) % 64]!, '.', ' ']) {
        if (c === TOKEN[i]) continue;
        expect(tokenFingerprint(`${TOKEN.slice(0, i)}${c}${TOKEN.slice(i + 1)}`), `position ${i}, "${c}"`).not.toBe(base);
      }
    }
    expect(tokenFingerprint(TOKEN.slice(0, -1))).not.toBe(base);
    expect(tokenFingerprint(`${TOKEN}A`)).not.toBe(base);
    expect(tokenFingerprint(`${TOKEN}\u0000`)).not.toBe(base);
  });

  it('tells a character beyond Latin-1 from the ASCII one with the same low byte', () => {
    const i = 40;
    const lookalike = `${TOKEN.slice(0, i)}${String.fromCharCode(0x100 + TOKEN.charCodeAt(i))}${TOKEN.slice(i + 1)}`;
    expect(tokenFingerprint(lookalike)).not.toBe(tokenFingerprint(TOKEN));
  });

  it('takes a string longer than its scratch, and still tells a change apart', () => {
    const long = TOKEN.repeat(100);
    expect(tokenFingerprint(long)).toBe(tokenFingerprint(TOKEN.repeat(100)));
    expect(tokenFingerprint(`${long.slice(0, -1)}x`)).not.toBe(tokenFingerprint(long));
  });
});
