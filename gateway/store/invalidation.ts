// The messages on the invalidation channel. Writers publish after their write; every gateway
// subscribes (store/cache-sync.ts) and drops or updates what it cached.
import type { RedisClient } from '../../runtime/redis.js';
import type { RedisKeys } from './keys.js';

export type Invalidation =
  | { kind: 'key-created'; id: string }
  | { kind: 'key-revoked'; id: string }
  | { kind: 'layout'; id: string }
  | { kind: 'signing-keys' };

export function encodeInvalidation(m: Invalidation): string {
  return m.kind === 'signing-keys' ? m.kind : `${m.kind}:${m.id}`;
}

export function decodeInvalidation(text: string): Invalidation | null {
  if (text === 'signing-keys') return { kind: 'signing-keys' };
  const i = text.indexOf(':');
  const kind = text.slice(0, i);
  const id = text.slice(i + 1);
  if (i < 1 || !id) return null;
  if (kind === 'key-created' || kind === 'key-revoked' || kind === 'layout') return { kind, id };
  return null;
}

export async function publishInvalidation(redis: RedisClient, keys: RedisKeys, m: Invalidation): Promise<void> {
  await redis.publish(keys.invalidationChannel(), encodeInvalidation(m));
}
