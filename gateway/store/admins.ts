// Team administrators: one hash per (lower-cased) email, holding the team and a scrypt hash.
import type { Redis } from 'ioredis';
import { hashPassword } from '../admin/passwords.js';
import { AppError } from '../errors.js';
import type { RedisKeys } from './keys.js';

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
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
  ) {}

  async create(teamId: string, email: string, password: string, now = Date.now()): Promise<AdminRecord> {
    const e = normaliseEmail(email);
    const record: AdminRecord = { email: e, teamId, passwordHash: await hashPassword(password), createdAt: now };
    const created = await this.redis.hsetnx(this.keys.admin(e), 'team', teamId);
    if (created === 0) throw new AppError('admin_exists', `an administrator ${e} already exists`);
    await this.redis.multi().hset(this.keys.admin(e), { passwordHash: record.passwordHash, createdAt: String(now) }).sadd(this.keys.teamAdmins(teamId), e).exec();
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
    const sessions = await this.redis.smembers(this.keys.adminSessions(record.email));
    const m = this.redis.multi().hset(this.keys.admin(record.email), 'passwordHash', record.passwordHash).del(this.keys.adminSessions(record.email));
    for (const s of sessions) m.del(this.keys.session(s));
    await m.exec();
    return record;
  }
}
