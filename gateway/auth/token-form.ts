// A token's text as the verification cache reads it, without verifying it: its 32-bit fingerprint,
// its signature segment, whether it is a JWS in canonical form, and the flat copies and interned
// values the cache keeps (token-verify.ts says why).

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
export function signatureOf(token: string): string {
  const dot = token.lastIndexOf('.');
  return dot < 0 ? '' : token.slice(dot + 1);
}

/** True when `signature` is the token's last segment (what follows its last dot): a signature holds no dot. */
export function endsInSignature(token: string, signature: string): boolean {
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
export function flatCopy(s: string): string {
  return Buffer.from(s, 'latin1').toString('latin1');
}

/** The few distinct claim values (layouts, teams, keys, kids) shared by all cached tokens. */
export class Interner {
  private readonly values = new Map<string, string>();
  of(s: string): string {
    const known = this.values.get(s);
    if (known !== undefined) return known;
    if (this.values.size > 100_000) this.values.clear();
    this.values.set(s, s);
    return s;
  }
}
