// Audience-token signing keys (HS256): kid -> a 256-bit random secret. One is current (signs new
// tokens); the others still verify until retired. Redis holds each secret sealed under the
// key-encryption key (signing-kek.ts): reading Redis does not let anyone sign a token. Listing and
// retiring keys need no KEK; loading the secrets, making a key and rewrapping do.
import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../../runtime/redis.js';
import { AppError } from '../errors.js';
import { publishInvalidation } from './invalidation.js';
import type { RedisKeys } from './keys.js';
import { KekError, type Kek, type SealedSecret } from './signing-kek.js';

export interface SigningKey {
  kid: string;
  secret: Uint8Array;
  createdAt: number;
  retiredAt: number | null;
}

/** A stored key this process cannot open (sealed under another KEK, or altered): it verifies nothing here. */
export interface UnreadableKey {
  kid: string;
  retiredAt: number | null;
  reason: string;
}

export interface SigningKeyInfo {
  kid: string;
  createdAt: number;
  retiredAt: number | null;
  current: boolean;
}

/** A record: `sealed` (this version), or `secret` in plain base64url (written before the KEK; `migrate` seals it). */
interface StoredKey {
  sealed?: SealedSecret;
  secret?: string;
  createdAt: number;
  retiredAt?: number;
}

export class SigningKeyStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    /** null: this process holds no KEK (list and retire only) */
    private readonly kek: Kek | null,
  ) {}

  private requireKek(): Kek {
    if (!this.kek) throw new KekError('SIGNING_KEK_FILE is not set: this needs the key-encryption key that seals the token-signing secrets');
    return this.kek;
  }

  private newKey(now: number): { kid: string; stored: StoredKey } {
    const kid = `sk_${randomBytes(6).toString('hex')}`;
    return { kid, stored: { sealed: this.requireKek().seal(kid, randomBytes(32)), createdAt: now } };
  }

  /**
   * Refuses to write a key under this KEK while the stored keys are sealed under another one: no
   * gateway of the deployment could open it (an operator whose machine still holds the KEK of
   * before a rewrap). Names both fingerprints.
   */
  private async checkSameKek(): Promise<void> {
    const kek = this.requireKek();
    const all = await this.redis.hgetall(this.keys.signingKeys());
    for (const [kid, raw] of Object.entries(all)) {
      const sealedUnder = (JSON.parse(raw) as StoredKey).sealed?.kek;
      if (sealedUnder !== undefined && sealedUnder !== kek.id) {
        throw new KekError(`the stored signing keys (${kid}, ...) are sealed under key-encryption key ${sealedUnder}, but SIGNING_KEK_FILE (${kek.file}) holds ${kek.id}: a key written under it would open on no gateway; give this command the KEK the gateways use`);
      }
    }
  }

  /** A record's secret: opened with the KEK, or a plain one written before it. */
  private secretOf(kid: string, s: StoredKey): Uint8Array {
    if (s.sealed) return this.requireKek().open(kid, s.sealed);
    return new Uint8Array(Buffer.from(s.secret ?? '', 'base64url'));
  }

  /**
   * The keys and the current kid as one snapshot (a transaction on {signing-keys}): read apart, a
   * key made or rotated in between gave a current kid without its secret.
   */
  private async snapshot(): Promise<{ all: Record<string, string>; current: string | null }> {
    const replies = await this.redis.multi().hgetall(this.keys.signingKeys()).get(this.keys.currentSigningKey()).exec();
    if (!replies) throw new Error('the signing keys\' transaction was aborted');
    for (const [err] of replies) if (err) throw err;
    return { all: replies[0]![1] as Record<string, string>, current: replies[1]![1] as string | null };
  }

  /**
   * Every key (retired ones included) and the current kid, each key opened on its own: one this
   * KEK cannot open is listed as unreadable (with its retirement, which needs no secret), so it
   * never keeps the others from loading.
   */
  async load(): Promise<{ current: string | null; keys: SigningKey[]; unreadable: UnreadableKey[] }> {
    const { all, current } = await this.snapshot();
    const keys: SigningKey[] = [];
    const unreadable: UnreadableKey[] = [];
    for (const [kid, raw] of Object.entries(all)) {
      const s = JSON.parse(raw) as StoredKey;
      try {
        keys.push({ kid, secret: this.secretOf(kid, s), createdAt: s.createdAt, retiredAt: s.retiredAt ?? null });
      } catch (e) {
        if (!(e instanceof KekError)) throw e;
        unreadable.push({ kid, retiredAt: s.retiredAt ?? null, reason: e.message });
      }
    }
    return { current, keys, unreadable };
  }

  /** Every key without its secret (no KEK needed). */
  async list(): Promise<SigningKeyInfo[]> {
    const { all, current } = await this.snapshot();
    const keys = Object.entries(all).map(([kid, raw]) => ({ kid, ...(JSON.parse(raw) as StoredKey) }));
    return keys.map((k) => ({ kid: k.kid, createdAt: k.createdAt, retiredAt: k.retiredAt ?? null, current: k.kid === current })).sort((a, b) => a.createdAt - b.createdAt);
  }

  /**
   * Makes sure a current key exists (first start, or Redis lost its data); safe when several
   * gateways do it at once: the key first, then the current kid with NX (both on {signing-keys});
   * the loser deletes its unused key. A crash between leaves an unused key, never a current kid
   * without its secret.
   */
  async ensureCurrent(now = Date.now()): Promise<void> {
    if (await this.redis.get(this.keys.currentSigningKey())) return;
    await this.checkSameKek();
    const { kid, stored } = this.newKey(now);
    await this.redis.hset(this.keys.signingKeys(), kid, JSON.stringify(stored));
    const won = await this.redis.set(this.keys.currentSigningKey(), kid, 'NX');
    if (won === null) await this.redis.hdel(this.keys.signingKeys(), kid);
    else await publishInvalidation(this.redis, this.keys, { kind: 'signing-keys' });
  }

  /** A new key signs from now on (one transaction on {signing-keys}); tokens signed with older keys keep verifying until those are retired. */
  async rotate(now = Date.now()): Promise<SigningKeyInfo> {
    await this.checkSameKek();
    const { kid, stored } = this.newKey(now);
    await this.redis.multi().hset(this.keys.signingKeys(), kid, JSON.stringify(stored)).set(this.keys.currentSigningKey(), kid).exec();
    await publishInvalidation(this.redis, this.keys, { kind: 'signing-keys' });
    return { kid, createdAt: now, retiredAt: null, current: true };
  }

  /** Tokens signed with this key stop verifying on every gateway. The current key cannot be retired. */
  async retire(kid: string, now = Date.now()): Promise<SigningKeyInfo> {
    const [raw, current] = await Promise.all([this.redis.hget(this.keys.signingKeys(), kid), this.redis.get(this.keys.currentSigningKey())]);
    if (raw === null) throw new AppError('signing_key_not_found', `no signing key ${JSON.stringify(kid)}`);
    if (kid === current) throw new AppError('signing_key_in_use', `${kid} is the current signing key; run "signing-key rotate" first`);
    const s = JSON.parse(raw) as StoredKey;
    s.retiredAt ??= now;
    await this.redis.hset(this.keys.signingKeys(), kid, JSON.stringify(s));
    await publishInvalidation(this.redis, this.keys, { kind: 'signing-keys' });
    return { kid, createdAt: s.createdAt, retiredAt: s.retiredAt, current: false };
  }

  /**
   * Seals the records written in plain (before the KEK) under this KEK; each is rewritten only if it
   * is still the plain one (HSET of a record another process sealed meanwhile is as good). The
   * number sealed.
   */
  async sealPlain(): Promise<number> {
    const kek = this.requireKek();
    const all = await this.redis.hgetall(this.keys.signingKeys());
    const writes: string[] = [];
    for (const [kid, raw] of Object.entries(all)) {
      const s = JSON.parse(raw) as StoredKey;
      if (s.sealed || s.secret === undefined) continue;
      const { secret, ...rest } = s;
      writes.push(kid, JSON.stringify({ ...rest, sealed: kek.seal(kid, Buffer.from(secret, 'base64url')) }));
    }
    if (writes.length > 0) await this.redis.hset(this.keys.signingKeys(), ...writes);
    return writes.length / 2;
  }

  /**
   * Re-encrypts every secret under `next`: each opened with this store's KEK (or read plain) and
   * sealed anew, all written in one HSET (one key, one slot), so a failure leaves the old records.
   * Gateways must be given `next` before they next reload the keys (see docs/operations.md).
   */
  async rewrap(next: Kek): Promise<number> {
    const all = await this.redis.hgetall(this.keys.signingKeys());
    const writes: string[] = [];
    for (const [kid, raw] of Object.entries(all)) {
      const stored = JSON.parse(raw) as StoredKey;
      const { secret: _, sealed: __, ...rest } = stored;
      writes.push(kid, JSON.stringify({ ...rest, sealed: next.seal(kid, this.secretOf(kid, stored)) }));
    }
    if (writes.length > 0) await this.redis.hset(this.keys.signingKeys(), ...writes);
    return writes.length / 2;
  }
}
