// Audience-token signing keys (HS256): kid -> a 256-bit random secret. One is current (signs new
// tokens); the others still verify until retired. Redis must therefore be private to the service.
import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../../runtime/redis.js';
import { AppError } from '../errors.js';
import { publishInvalidation } from './invalidation.js';
import type { RedisKeys } from './keys.js';

export interface SigningKey {
  kid: string;
  secret: Uint8Array;
  createdAt: number;
  retiredAt: number | null;
}

export interface SigningKeyInfo {
  kid: string;
  createdAt: number;
  retiredAt: number | null;
  current: boolean;
}

interface StoredKey {
  secret: string;
  createdAt: number;
  retiredAt?: number;
}

function newKey(now: number): { kid: string; stored: StoredKey } {
  return { kid: `sk_${randomBytes(6).toString('hex')}`, stored: { secret: randomBytes(32).toString('base64url'), createdAt: now } };
}

export class SigningKeyStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
  ) {}

  /** Every key (retired ones included) and the current kid. */
  async load(): Promise<{ current: string | null; keys: SigningKey[] }> {
    const [all, current] = await Promise.all([this.redis.hgetall(this.keys.signingKeys()), this.redis.get(this.keys.currentSigningKey())]);
    const keys = Object.entries(all).map(([kid, raw]) => {
      const s = JSON.parse(raw) as StoredKey;
      return { kid, secret: new Uint8Array(Buffer.from(s.secret, 'base64url')), createdAt: s.createdAt, retiredAt: s.retiredAt ?? null };
    });
    return { current, keys };
  }

  async list(): Promise<SigningKeyInfo[]> {
    const { current, keys } = await this.load();
    return keys.map((k) => ({ kid: k.kid, createdAt: k.createdAt, retiredAt: k.retiredAt, current: k.kid === current })).sort((a, b) => a.createdAt - b.createdAt);
  }

  /**
   * Makes sure a current key exists (first start, or Redis lost its data); safe when several
   * gateways do it at once: the key first, then the current kid with NX (both on {signing-keys});
   * the loser deletes its unused key. A crash between leaves an unused key, never a current kid
   * without its secret.
   */
  async ensureCurrent(now = Date.now()): Promise<void> {
    if (await this.redis.get(this.keys.currentSigningKey())) return;
    const { kid, stored } = newKey(now);
    await this.redis.hset(this.keys.signingKeys(), kid, JSON.stringify(stored));
    const won = await this.redis.set(this.keys.currentSigningKey(), kid, 'NX');
    if (won === null) await this.redis.hdel(this.keys.signingKeys(), kid);
    else await publishInvalidation(this.redis, this.keys, { kind: 'signing-keys' });
  }

  /** A new key signs from now on (one transaction on {signing-keys}); tokens signed with older keys keep verifying until those are retired. */
  async rotate(now = Date.now()): Promise<SigningKeyInfo> {
    const { kid, stored } = newKey(now);
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
}
