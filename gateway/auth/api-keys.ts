// API-key authentication (x-api-key: <keyId>.<secret>) with an in-process cache of key records.
// Unknown keyIds and wrong secrets take the same path and the same constant-time comparison.
// Revocation lives in each key's own record (`revokedAt`; no global set, so it shards with the key).
// An in-process set of revoked keyIds, kept current by the invalidation channel and a periodic
// re-check of every keyId this gateway has met (cached records and the keys of verified tokens),
// serves the /action hot path with no Redis round trip. The API-key routes also confirm against
// the record as their last step before answering, so a revocation committed before that read
// fails the request even if it was received earlier (spec 3: in-flight requests fail).
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { AppError, orUnavailable } from '../errors.js';
import type { ApiKeyRecord, ApiKeyStore, KeyScope } from '../store/api-keys.js';
import { untimed, type RedisTimer } from '../store/redis.js';

export interface AuthedKey {
  keyId: string;
  teamId: string;
  scope: KeyScope;
  /** the key's own mint rate and burst, if it has them */
  mintRate?: number | undefined;
  mintBurst?: number | undefined;
}

const KEY_ID = /^ak_[0-9a-f]{16}$/;
const SECRET = /^[A-Za-z0-9_-]{43}$/;

/** Splits `<keyId>.<secret>`; null when the value cannot be a key. */
export function parseApiKey(value: string): { keyId: string; secret: string } | null {
  const dot = value.indexOf('.');
  if (dot < 0) return null;
  const keyId = value.slice(0, dot);
  const secret = value.slice(dot + 1);
  return KEY_ID.test(keyId) && SECRET.test(secret) ? { keyId, secret } : null;
}

/** Whether the key may be used with a layout of the given team. */
export function keyCoversLayout(key: AuthedKey, layoutId: string, layoutTeamId: string): boolean {
  if (layoutTeamId !== key.teamId) return false;
  return key.scope.kind === 'team' || key.scope.layouts.includes(layoutId);
}

/** lastUsedAt is written at most this often per key and process: it is a hint, not an audit log. */
const LAST_USED_EVERY_MS = 60_000;

export class ApiKeyAuth {
  /** keyId -> record, or null for a keyId Redis does not know (bounded, so random keyIds cannot exhaust memory). */
  private readonly cache = new LRUCache<string, { record: ApiKeyRecord | null }>({ max: 50_000 });
  private revoked = new Set<string>();
  /** keyIds of tokens this gateway verified: re-checked with the cached records (bounded by the keys in use) */
  private readonly tokenKeys = new Set<string>();
  private readonly lastUsedWritten = new Map<string, number>();
  private readonly dummyHash = randomBytes(32);

  constructor(
    private readonly store: ApiKeyStore,
    private readonly now: () => number = Date.now,
    private readonly onBackgroundError: (e: unknown) => void = () => {},
    private readonly timed: RedisTimer = untimed,
  ) {}

  /** Re-reads the revocation of every keyId this gateway has met; call on every re-check and reconnect. */
  async reload(): Promise<void> {
    const known = new Set(this.tokenKeys);
    for (const [keyId, entry] of this.cache.entries()) {
      if (entry.record === null) this.cache.delete(keyId);
      else known.add(keyId);
    }
    const revoked = await this.store.revokedAmong(known);
    this.revoked = new Set([...revoked, ...[...this.revoked].filter((id) => !known.has(id))]);
  }

  /**
   * A verified token's keyId. The first time this gateway meets it, its revocation is read from the
   * key's record before the token is accepted (unavailable if Redis cannot say); from then on it is
   * kept current by the invalidation messages and the re-check.
   */
  async trackTokenKey(keyId: string): Promise<void> {
    if (this.tokenKeys.has(keyId)) return;
    if (await orUnavailable(this.timed('key_revoked_check', this.store.isRevoked(keyId)))) this.revoked.add(keyId);
    this.tokenKeys.add(keyId);
  }

  keyCreated(keyId: string): void {
    this.cache.delete(keyId);
  }

  keyRevoked(keyId: string): void {
    this.revoked.add(keyId);
  }

  isRevoked(keyId: string): boolean {
    return this.revoked.has(keyId);
  }

  /** The final check of an API-key request, read from Redis: api_key_revoked, or unavailable when Redis cannot say. */
  async confirmNotRevoked(keyId: string): Promise<void> {
    if (this.revoked.has(keyId) || (await orUnavailable(this.timed('key_revoked_check', this.store.isRevoked(keyId))))) {
      this.revoked.add(keyId);
      throw new AppError('api_key_revoked');
    }
  }

  /** The key named by the header value, or AppError api_key_missing / api_key_invalid / api_key_revoked / unavailable. */
  async authenticate(header: string): Promise<AuthedKey> {
    if (header === '') throw new AppError('api_key_missing');
    const parsed = parseApiKey(header);
    if (!parsed) throw new AppError('api_key_invalid');
    let entry = this.cache.get(parsed.keyId);
    if (!entry) {
      entry = { record: await orUnavailable(this.timed('key_load', this.store.get(parsed.keyId))) };
      this.cache.set(parsed.keyId, entry);
    }
    const expected = entry.record ? Buffer.from(entry.record.secretHash, 'hex') : this.dummyHash;
    const given = createHash('sha256').update(parsed.secret).digest();
    const match = timingSafeEqual(given, expected.length === 32 ? expected : this.dummyHash);
    if (!match || !entry.record) throw new AppError('api_key_invalid');
    const record = entry.record;
    if (record.revokedAt !== null || this.revoked.has(record.keyId)) throw new AppError('api_key_revoked');
    this.noteUse(record.keyId);
    return { keyId: record.keyId, teamId: record.teamId, scope: record.scope, mintRate: record.mintRate, mintBurst: record.mintBurst };
  }

  private noteUse(keyId: string): void {
    const now = this.now();
    if (now - (this.lastUsedWritten.get(keyId) ?? 0) < LAST_USED_EVERY_MS) return;
    this.lastUsedWritten.set(keyId, now);
    this.store.touchLastUsed(keyId, now).catch(this.onBackgroundError);
  }
}
