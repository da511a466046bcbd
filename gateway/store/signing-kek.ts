// The key-encryption key (KEK) that seals the audience-token signing secrets at rest. Redis holds
// each secret only as AES-256-GCM ciphertext under this key, bound to its kid (the additional
// authenticated data), so a Redis dump, a replica, a backup or a MONITOR yields nothing that can
// sign a token. Only the gateway and audiencectl read the KEK, from SIGNING_KEK_FILE: 32 random
// bytes written as 64 hex digits or base64 (`openssl rand -hex 32`), readable by the service user
// only (systemd LoadCredential=, a Kubernetes Secret).
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

export class KekError extends Error {
  override name = 'KekError';
}

/** A signing secret as Redis keeps it: which KEK sealed it, and the AES-256-GCM output (base64url). */
export interface SealedSecret {
  kek: string;
  iv: string;
  tag: string;
  ct: string;
}

export interface Kek {
  /** a fingerprint of the key (never the key): names which KEK sealed a record */
  readonly id: string;
  /** where it was read from, for messages */
  readonly file: string;
  seal(kid: string, secret: Uint8Array): SealedSecret;
  /** The secret; a KekError naming the file when this KEK did not seal it (or the record was altered). */
  open(kid: string, sealed: SealedSecret): Uint8Array;
}

/** How to make one, for messages. */
export const MAKE_KEK = 'openssl rand -hex 32';

function aad(kid: string): Buffer {
  return Buffer.from(`audience-control signing key ${kid}`);
}

/** 32 bytes from the file's text: 64 hex digits, or base64/base64url; null when it is neither. */
function parseKey(text: string): Buffer | null {
  const t = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(t)) return Buffer.from(t, 'hex');
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(t)) {
    const b = Buffer.from(t, t.includes('-') || t.includes('_') ? 'base64url' : 'base64');
    return b.length === 32 ? b : null;
  }
  return null;
}

/**
 * Why 32 bytes are no random key, or null: fewer than 16 distinct byte values (all zeros, a short
 * pattern repeated) or each byte the previous one plus a fixed step (counting). 32 random bytes
 * have about 30 distinct values; fewer than 16 happens by chance less than once in 10^14.
 */
export function degenerateKey(key: Buffer): string | null {
  if (new Set(key).size < 16) return 'it repeats a few byte values';
  const step = (key[1]! - key[0]! + 256) % 256;
  if (key.every((b, i) => i === 0 || (b - key[i - 1]! + 256) % 256 === step)) return 'its bytes count up or down in fixed steps';
  return null;
}

/**
 * Why others may read the file, or null. Its owner's bits are its own; group bits only for a group
 * this process is in (a Kubernetes Secret mounted 0440 with the pod's fsGroup); none for others.
 */
function readableByOthers(file: string): string | null {
  const st = statSync(file);
  if ((st.mode & 0o007) !== 0) return 'others';
  const groups = new Set([process.getgid?.(), ...(process.getgroups?.() ?? [])]);
  if ((st.mode & 0o070) !== 0 && !groups.has(st.gid)) return `group ${st.gid}, which this process is not in`;
  return null;
}

/** The KEK of a key (32 bytes) read from `file`. */
export function kekFromBytes(key: Buffer, file: string): Kek {
  const id = `kek_${createHash('sha256').update('audience-control kek\0').update(key).digest('hex').slice(0, 12)}`;
  return {
    id,
    file,
    seal(kid, secret) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(aad(kid));
      const ct = Buffer.concat([cipher.update(secret), cipher.final()]);
      return { kek: id, iv: iv.toString('base64url'), tag: cipher.getAuthTag().toString('base64url'), ct: ct.toString('base64url') };
    },
    open(kid, sealed) {
      if (sealed.kek !== id) throw new KekError(`signing key ${kid} is sealed under key-encryption key ${sealed.kek}, but SIGNING_KEK_FILE (${file}) holds ${id}: give the gateway the key it was sealed with (or rewrap it: audiencectl signing-keys rewrap)`);
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(sealed.iv, 'base64url'));
        decipher.setAAD(aad(kid));
        decipher.setAuthTag(Buffer.from(sealed.tag, 'base64url'));
        return new Uint8Array(Buffer.concat([decipher.update(Buffer.from(sealed.ct, 'base64url')), decipher.final()]));
      } catch {
        throw new KekError(`signing key ${kid} does not open with SIGNING_KEK_FILE (${file}): its record was altered, or sealed with another key of the same fingerprint`);
      }
    },
  };
}

/**
 * Reads the KEK. A KekError naming the setting and the file when it is not set, cannot be read, or
 * does not hold 32 bytes in hex or base64.
 */
export function loadKek(file: string | undefined, setting = 'SIGNING_KEK_FILE'): Kek {
  if (!file) throw new KekError(`${setting} is not set: the gateway and audiencectl need the key-encryption key that seals the token-signing secrets in Redis (make one: ${MAKE_KEK} > FILE; chmod 600 FILE)`);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new KekError(`${setting}: cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  const exposed = readableByOthers(file);
  if (exposed) throw new KekError(`${setting}: ${file} can be read by ${exposed}: chmod 600 ${file} (or 640 with the service's own group)`);
  const key = parseKey(text);
  if (!key) throw new KekError(`${setting}: ${file} must hold 32 random bytes as 64 hex digits or base64 (make one: ${MAKE_KEK})`);
  const weak = degenerateKey(key);
  if (weak) throw new KekError(`${setting}: ${file} is not a random key (${weak}); make one: ${MAKE_KEK}`);
  return kekFromBytes(key, file);
}

/**
 * The KEK file at `path`, made (32 random bytes in hex, mode 0600) when there is none yet: for the
 * demo and the tests, which hold their own. A service is given one (see docs/operations.md).
 */
export function ensureKekFile(path: string): string {
  mkdirSync(dirname(path), { recursive: true });
  try {
    writeFileSync(path, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  return path;
}
