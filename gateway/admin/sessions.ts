// Admin sessions, kept server-side in Redis. The cookie holds a random id; Redis holds only its
// SHA-256 (a copy of Redis does not yield live sessions). A session ends after the idle timeout
// (the key's TTL, renewed on use), after the absolute timeout, or on sign-out.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { RedisClient } from '../../runtime/redis.js';
import type { RedisKeys } from '../store/keys.js';

export interface Session {
  email: string;
  teamId: string;
  csrfToken: string;
  createdAt: number;
}

export const SESSION_COOKIE = 'ac_session';
/** Readable by the page; says only that a session cookie was set. */
export const SIGNED_IN_HINT = 'ac_signed_in';

const hash = (sid: string) => createHash('sha256').update(sid).digest('base64url');

export class SessionStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly idleSeconds: number,
    private readonly maxSeconds: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** A new session; returns the id for the cookie. */
  async create(email: string, teamId: string): Promise<{ sessionId: string; session: Session }> {
    const sessionId = randomBytes(32).toString('base64url');
    const session: Session = { email, teamId, csrfToken: randomBytes(32).toString('base64url'), createdAt: this.now() };
    const key = this.keys.session(hash(sessionId));
    // The administrator's index first (so a password reset can always find the session), then the
    // session itself (one slot: record and expiry together). A crash between leaves a dangling
    // index entry, which a reset deletes harmlessly.
    await this.redis.sadd(this.keys.adminSessions(email), hash(sessionId));
    await this.redis.multi().hset(key, { email, team: teamId, csrf: session.csrfToken, createdAt: String(session.createdAt) }).expire(key, this.idleSeconds).exec();
    return { sessionId, session };
  }

  /** The live session for a cookie value, renewing its idle timeout; null when absent or expired. */
  async get(sessionId: string): Promise<Session | null> {
    if (!/^[A-Za-z0-9_-]{43}$/.test(sessionId)) return null;
    const key = this.keys.session(hash(sessionId));
    const h = await this.redis.hgetall(key);
    if (!h.email || !h.team || !h.csrf) return null;
    const createdAt = Number(h.createdAt);
    if (this.now() - createdAt >= this.maxSeconds * 1000) {
      await this.destroy(sessionId, h.email);
      return null;
    }
    await this.redis.expire(key, this.idleSeconds);
    return { email: h.email, teamId: h.team, csrfToken: h.csrf, createdAt };
  }

  async destroy(sessionId: string, email: string): Promise<void> {
    await this.redis.del(this.keys.session(hash(sessionId))); // the session first: once it is gone, it is over
    await this.redis.srem(this.keys.adminSessions(email), hash(sessionId));
  }
}

/** Constant-time comparison of the x-csrf-token header with the session's token. */
export function csrfMatches(session: Session, header: string): boolean {
  const a = Buffer.from(header);
  const b = Buffer.from(session.csrfToken);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The value of one cookie in a Cookie header. */
export function readCookie(header: string, name: string): string | null {
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}
