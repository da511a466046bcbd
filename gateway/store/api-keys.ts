// API keys in Redis. Only a SHA-256 hash of the secret is stored: the secret is 256 random bits,
// so a fast hash is as strong as a slow one here, and it keeps authentication cheap.
import { createHash, randomBytes } from 'node:crypto';
import type { RedisClient } from '../../runtime/redis.js';
import { AppError } from '../errors.js';
import { publishInvalidation } from './invalidation.js';
import type { RedisKeys } from './keys.js';
import type { LayoutStore } from './layouts.js';

/** The team's layouts (now and future), or an explicit allow-list of them. */
export type KeyScope = { kind: 'team' } | { kind: 'layouts'; layouts: string[] };

export interface ApiKeyRecord {
  keyId: string;
  teamId: string;
  name: string;
  /** hex SHA-256 of the secret */
  secretHash: string;
  scope: KeyScope;
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
  /** this key's own mint rate and burst (POST /token), if it was created with them; else the gateway's defaults */
  mintRate?: number;
  mintBurst?: number;
}

/** What a key may be created with besides its team. */
export interface KeyOptions {
  name?: string;
  layouts?: string[];
  /** tokens a second this key may keep minting, per gateway process */
  mintRate?: number;
  /** tokens at once after a pause */
  mintBurst?: number;
}

const MINT_RATE_MAX = 100_000;
const MINT_BURST_MAX = 1_000_000;

/** What may be shown of a key: everything but its hash. */
export type ApiKeyInfo = Omit<ApiKeyRecord, 'secretHash'>;

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export class ApiKeyStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly layouts: LayoutStore,
  ) {}

  /**
   * Issues a key for the team. The returned apiKey (`<keyId>.<secret>`) is the only copy of the secret.
   * With `layouts`, the key is limited to those layouts, each of which must belong to the team.
   */
  async create(teamId: string, opts: KeyOptions = {}, now = Date.now()): Promise<{ keyId: string; apiKey: string; info: ApiKeyInfo }> {
    const name = (opts.name ?? '').trim() || 'unnamed';
    if (name.length > 200) throw new AppError('invalid_argument', 'key name must be at most 200 characters');
    const { mintRate, mintBurst } = opts;
    if (mintRate !== undefined && !(Number.isFinite(mintRate) && mintRate >= 0.01 && mintRate <= MINT_RATE_MAX)) {
      throw new AppError('invalid_argument', `mint rate must be a number from 0.01 to ${MINT_RATE_MAX} tokens a second`);
    }
    if (mintBurst !== undefined && !(Number.isInteger(mintBurst) && mintBurst >= 1 && mintBurst <= MINT_BURST_MAX)) {
      throw new AppError('invalid_argument', `mint burst must be a whole number from 1 to ${MINT_BURST_MAX}`);
    }
    let scope: KeyScope = { kind: 'team' };
    if (opts.layouts) {
      const list = [...new Set(opts.layouts.map((l) => l.trim()).filter(Boolean))];
      if (list.length === 0) throw new AppError('invalid_argument', 'an allow-list needs at least one layoutId');
      for (const id of list) await this.layouts.requireOwned(teamId, id);
      scope = { kind: 'layouts', layouts: list.sort() };
    }
    const keyId = `ak_${randomBytes(8).toString('hex')}`;
    const secret = randomBytes(32).toString('base64url');
    const record: ApiKeyRecord = {
      keyId,
      teamId,
      name,
      secretHash: hashSecret(secret),
      scope,
      createdAt: now,
      lastUsedAt: null,
      revokedAt: null,
      ...(mintRate !== undefined && { mintRate }),
      ...(mintBurst !== undefined && { mintBurst }),
    };
    // The record first, the team's index after (another slot): a crash between them leaves a
    // working key that `key list` does not show yet; nothing half-made, nothing that blocks a retry.
    await this.redis.hset(this.keys.apiKey(keyId), {
      team: teamId,
      name,
      secretHash: record.secretHash,
      scope: JSON.stringify(scope),
      createdAt: String(now),
      ...(mintRate !== undefined && { mintRate: String(mintRate) }),
      ...(mintBurst !== undefined && { mintBurst: String(mintBurst) }),
    });
    await this.redis.sadd(this.keys.teamKeys(teamId), keyId);
    await publishInvalidation(this.redis, this.keys, { kind: 'key-created', id: keyId });
    const { secretHash: _, ...info } = record;
    return { keyId, apiKey: `${keyId}.${secret}`, info };
  }

  async get(keyId: string): Promise<ApiKeyRecord | null> {
    const h = await this.redis.hgetall(this.keys.apiKey(keyId));
    if (!h.team || !h.secretHash) return null;
    return {
      keyId,
      teamId: h.team,
      name: h.name ?? '',
      secretHash: h.secretHash,
      scope: JSON.parse(h.scope ?? '{"kind":"team"}') as KeyScope,
      createdAt: Number(h.createdAt),
      lastUsedAt: h.lastUsedAt ? Number(h.lastUsedAt) : null,
      revokedAt: h.revokedAt ? Number(h.revokedAt) : null,
      ...(h.mintRate && { mintRate: Number(h.mintRate) }),
      ...(h.mintBurst && { mintBurst: Number(h.mintBurst) }),
    };
  }

  async listByTeam(teamId: string): Promise<ApiKeyInfo[]> {
    const ids = await this.redis.smembers(this.keys.teamKeys(teamId));
    const records = await Promise.all(ids.map((id) => this.get(id)));
    return records
      .filter((r): r is ApiKeyRecord => r !== null && r.teamId === teamId)
      .map(({ secretHash: _, ...info }) => info)
      .sort((a, b) => a.createdAt - b.createdAt);
  }

  /**
   * Revokes a key at once on every gateway: `revokedAt` in the key's own record (one command, one
   * slot), then the invalidation message. Revoking twice keeps the first revocation time.
   */
  async revoke(keyId: string, now = Date.now()): Promise<ApiKeyInfo> {
    const record = await this.get(keyId);
    if (!record) throw new AppError('key_not_found', `no API key ${JSON.stringify(keyId)}`);
    if (record.revokedAt === null) {
      await this.redis.hsetnx(this.keys.apiKey(keyId), 'revokedAt', String(now));
      record.revokedAt = Number((await this.redis.hget(this.keys.apiKey(keyId), 'revokedAt')) ?? now);
    }
    await publishInvalidation(this.redis, this.keys, { kind: 'key-revoked', id: keyId });
    const { secretHash: _, ...info } = record;
    return info;
  }

  /**
   * Whether the key is revoked: its record says so, or its record is gone (evicted, lost in a
   * partial restore, deleted), so a revocation can never be forgotten into a working key.
   */
  async isRevoked(keyId: string): Promise<boolean> {
    const [team, revokedAt] = await this.redis.hmget(this.keys.apiKey(keyId), 'team', 'revokedAt');
    return team === null || revokedAt !== null;
  }

  /** Which of these keys are revoked now (one single-key read each, so it works across slots). */
  async revokedAmong(keyIds: Iterable<string>): Promise<string[]> {
    const ids = [...keyIds];
    const flags = await Promise.all(ids.map((id) => this.isRevoked(id)));
    return ids.filter((_, i) => flags[i]);
  }

  async touchLastUsed(keyId: string, at: number): Promise<void> {
    await this.redis.hset(this.keys.apiKey(keyId), 'lastUsedAt', String(at));
  }
}
