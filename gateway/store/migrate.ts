// Moves control-plane data written under the 0.1 key names (keys.ts: LegacyRedisKeys) to the
// tagged ones. Idempotent: every step copies what the old key holds into the new one (merging,
// never overwriting a newer value) and only then deletes the old key, so a crash half-way leaves
// both, and the next run finishes the job. It walks from the old registries (the teams hash, each
// team's sets, the revoked set, the signing keys), reading and writing one key per command, so it
// runs on one server and on a cluster alike. Layouts and streams kept their names.
import type { RedisClient } from '../../runtime/redis.js';
import { LegacyRedisKeys, RedisKeys } from './keys.js';

export interface MigrationReport {
  /** old keys moved (and deleted) */
  moved: number;
}

/** True when any 0.1 registry key is still there (cheap: three EXISTS). */
export async function hasLegacyKeys(redis: RedisClient, prefix: string): Promise<boolean> {
  const old = new LegacyRedisKeys(prefix);
  const found = await Promise.all([old.teams(), old.signingKeys(), old.revokedKeys()].map((k) => redis.exists(k)));
  return found.some((n) => n === 1);
}

export async function migrateLegacyKeys(redis: RedisClient, prefix: string): Promise<MigrationReport> {
  const old = new LegacyRedisKeys(prefix);
  const now = new RedisKeys(prefix);
  let moved = 0;

  const moveHash = async (from: string, to: string, keepExisting = true): Promise<Record<string, string>> => {
    const h = await redis.hgetall(from);
    const fields = Object.entries(h);
    if (fields.length === 0) return h;
    // HSETNX field by field: a value written under the new name since (a newer one) wins
    await Promise.all(fields.map(([f, v]) => (keepExisting ? redis.hsetnx(to, f, v) : redis.hset(to, f, v))));
    const ttl = await redis.pttl(from);
    if (ttl > 0) await redis.pexpire(to, ttl);
    await redis.del(from);
    moved++;
    return h;
  };
  const moveSet = async (from: string, to: string): Promise<string[]> => {
    const members = await redis.smembers(from);
    if (members.length === 0) return members;
    await redis.sadd(to, ...members);
    await redis.del(from);
    moved++;
    return members;
  };

  // Teams first: the rest is found through them. The new registry is written before the old goes.
  const teams = await redis.hgetall(old.teams());
  const teamIds = Object.keys(teams);
  for (const teamId of teamIds) {
    const keyIds = await redis.smembers(old.teamKeys(teamId));
    for (const keyId of keyIds) await moveHash(old.apiKey(keyId), now.apiKey(keyId));
    const emails = await redis.smembers(old.teamAdmins(teamId));
    for (const email of emails) {
      const sessions = await redis.smembers(old.adminSessions(email));
      for (const s of sessions) await moveHash(old.session(s), now.session(s));
      await moveSet(old.adminSessions(email), now.adminSessions(email));
      await moveHash(old.admin(email), now.admin(email));
    }
    await moveSet(old.teamKeys(teamId), now.teamKeys(teamId));
    await moveSet(old.teamAdmins(teamId), now.teamAdmins(teamId));
    await moveSet(old.teamLayouts(teamId), now.teamLayouts(teamId));
  }
  await moveHash(old.teams(), now.teams());

  // The revoked set becomes revokedAt in each key's own record (its time is in the record already;
  // a record without one gets the migration's time).
  const revoked = await redis.smembers(old.revokedKeys());
  for (const keyId of revoked) {
    await moveHash(old.apiKey(keyId), now.apiKey(keyId)); // a key whose team index was lost
    if ((await redis.exists(now.apiKey(keyId))) === 1) await redis.hsetnx(now.apiKey(keyId), 'revokedAt', String(Date.now()));
  }
  if (revoked.length > 0) {
    await redis.del(old.revokedKeys());
    moved++;
  }

  // Signing keys: the kids and secrets as they were (tokens already issued keep verifying).
  await moveHash(old.signingKeys(), now.signingKeys());
  const current = await redis.get(old.currentSigningKey());
  if (current !== null) {
    await redis.set(now.currentSigningKey(), current, 'NX');
    await redis.del(old.currentSigningKey());
    moved++;
  }
  return { moved };
}
