// Rate limit of sign-in attempts, per account and per client address, in Redis so every gateway
// counts together; each attempt is reserved before the password is hashed, so parallel guesses
// cannot outrun it. Unknown emails are counted like known ones, so the limit reveals nothing. The
// hashing in flight is bounded per process, so a sign-in flood cannot starve the hot path.
import type { RedisClient } from '../../runtime/redis.js';
import { AppError } from '../errors.js';
import type { RedisKeys } from '../store/keys.js';

export interface LimiterSettings {
  windowSeconds: number;
  maxPerAccount: number;
  maxPerAddress: number;
  /** password hashes computed at once in this process */
  maxInFlight: number;
}

export class LoginLimiter {
  private inFlight = 0;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly s: LimiterSettings,
  ) {}

  /**
   * Takes one of the process's password-hashing places (beyond maxInFlight: too_many_attempts,
   * Retry-After 1, nothing spent) and reserves the attempt in both counters before any hashing, so
   * parallel guesses cannot outrun the limit: each INCR is atomic, and one over the limit is 429.
   * Call `release()` when done, and `succeed()` after a correct password.
   */
  async reserve(account: string, address: string): Promise<void> {
    if (this.inFlight >= this.s.maxInFlight) {
      throw new AppError('too_many_attempts', 'Too many sign-ins at once; try again in 1 s.', undefined, [['retry-after', '1']]);
    }
    this.inFlight++;
    try {
      const counted = await Promise.all([this.count('account', account), this.count('address', address)]);
      const over = counted.filter((c, i) => c.n > (i === 0 ? this.s.maxPerAccount : this.s.maxPerAddress));
      if (over.length > 0) {
        const seconds = Math.max(1, Math.ceil(Math.max(...over.map((c) => c.ttlMs)) / 1000));
        throw new AppError('too_many_attempts', `Too many failed sign-ins; try again in ${seconds} s.`, undefined, [['retry-after', String(seconds)]]);
      }
    } catch (e) {
      this.inFlight--;
      throw e;
    }
  }

  /** Gives back the hashing place taken by a successful reserve(). */
  release(): void {
    this.inFlight--;
  }

  /** One transaction per counter (each is its own owner, so its own slot): the attempt, the window, what is left of it. */
  private async count(kind: 'account' | 'address', who: string): Promise<{ n: number; ttlMs: number }> {
    const key = this.keys.loginFailures(kind, who);
    const r = await this.redis.multi().incr(key).expire(key, this.s.windowSeconds, 'NX').pttl(key).exec();
    const failed = r?.find(([err]) => err)?.[0];
    if (failed || !r) throw failed ?? new Error('sign-in counter: no reply');
    return { n: Number(r[0]![1]), ttlMs: Number(r[2]![1]) };
  }

  /** A correct password clears the account's counter and gives the address its attempt back. */
  async succeed(account: string, address: string): Promise<void> {
    await Promise.all([this.redis.del(this.keys.loginFailures('account', account)), this.redis.decr(this.keys.loginFailures('address', address))]);
  }
}
