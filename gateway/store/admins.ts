// Team administrators: one hash per (lower-cased) email, holding the team and a scrypt hash.
import type { RedisClient } from '../../runtime/redis.js';
import { hashPassword } from '../admin/passwords.js';
import { AppError } from '../errors.js';
import type { RedisKeys } from './keys.js';
import { throwIfRefused } from './script-replies.js';
import { runScript } from './scripts.js';

export interface AdminRecord {
  email: string;
  teamId: string;
  passwordHash: string;
  createdAt: number;
}

const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,190}\.[^\s@]{1,63}$/;

/** The canonical form of an email, or invalid_argument. */
export function normaliseEmail(email: string): string {
  const e = email.trim().toLowerCase();
  if (!EMAIL.test(e)) throw new AppError('invalid_argument', `${JSON.stringify(email)} is not an email address`);
  return e;
}

export class AdminStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
  ) {}

  async create(teamId: string, email: string, password: string, now = Date.now()): Promise<AdminRecord> {
    const e = normaliseEmail(email);
    const record: AdminRecord = { email: e, teamId, passwordHash: await hashPassword(password), createdAt: now };
    // The record whole (one script, one slot), then the team's index (another slot). A crash in
    // between leaves a complete administrator missing from the index; a retry restores the index
    // and answers admin_exists.
    const [created, owner] = (await runScript(this.redis, 'createAdmin', [this.keys.admin(e)], [teamId, record.passwordHash, now])) as [number, string | null];
    if (owner === teamId) await this.redis.sadd(this.keys.teamAdmins(teamId), e);
    throwIfRefused('createAdmin', Number(created), `an administrator ${e} already exists`);
    return record;
  }

  async get(email: string): Promise<AdminRecord | null> {
    let e: string;
    try {
      e = normaliseEmail(email);
    } catch {
      return null;
    }
    const h = await this.redis.hgetall(this.keys.admin(e));
    if (!h.team || !h.passwordHash) return null;
    return { email: e, teamId: h.team, passwordHash: h.passwordHash, createdAt: Number(h.createdAt ?? 0) };
  }

  /** Sets a new password and ends every session the administrator had. */
  async resetPassword(email: string, password: string): Promise<AdminRecord> {
    const record = await this.get(email);
    if (!record) throw new AppError('admin_not_found', `no administrator ${JSON.stringify(email)}`);
    record.passwordHash = await hashPassword(password);
    // The new password first; then every session ends (each its own slot), then their index.
    // A crash half-way leaves sessions that a retry (a new password again) ends.
    await this.redis.hset(this.keys.admin(record.email), 'passwordHash', record.passwordHash);
    const sessions = await this.redis.smembers(this.keys.adminSessions(record.email));
    await Promise.all(sessions.map((s) => this.redis.del(this.keys.session(s))));
    await this.redis.del(this.keys.adminSessions(record.email));
    return record;
  }
}
