// Administrator passwords: scrypt at one of OWASP's recommended costs (N=2^15, r=8, p=3: 32 MiB,
// about as strong as N=2^17, r=8, p=1 with a quarter of the memory). Async, so the thread pool
// does the work and the event loop keeps serving /action.
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const PARAMS = { N: 2 ** 15, r: 8, p: 3 } as const;
const KEY_LEN = 32;
const MAXMEM = 64 * 1024 * 1024;

function derive(password: string, salt: Buffer, opts: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => scrypt(password.normalize('NFC'), salt, KEY_LEN, { ...opts, maxmem: MAXMEM }, (err, key) => (err ? reject(err) : resolve(key))));
}

/** `scrypt$N$r$p$salt$hash` (base64url). */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, PARAMS);
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/**
 * A stored hash that no password matches, at the current cost: an unknown email's sign-in is checked
 * against it, so it costs one scrypt as a known one's does. Made of random bytes, not hashed: a
 * process start spends nothing on it.
 */
export function unmatchableHash(): string {
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, randomBytes(16).toString('base64url'), randomBytes(KEY_LEN).toString('base64url')].join('$');
}

/** Constant-time check of a password against a stored hash (false for a malformed hash). */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [kind, n, r, p, salt, hash] = stored.split('$');
  if (kind !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const key = await derive(password, Buffer.from(salt, 'base64url'), { N: Number(n), r: Number(r), p: Number(p) });
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/** A generated password: 20 characters from a 55-symbol alphabet (about 115 bits), easy to paste, no look-alike characters. */
export function generatePassword(): string {
  const alphabet = 'abcdefghjkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789';
  const bytes = randomBytes(40);
  let out = '';
  for (const b of bytes) {
    if (b < 220) out += alphabet[b % alphabet.length]; // 220 = 4 * 55: no modulo bias
    if (out.length === 20) break;
  }
  return out.length === 20 ? out : generatePassword();
}
