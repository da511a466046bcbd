// Rate limit of failed sign-ins, per account and per client address, in Redis so every gateway
// counts together. Unknown emails are counted like known ones, so the limit reveals nothing.
import type { RedisClient } from '../../runtime/redis.js';
import { AppError } from '../errors.js';
import type { RedisKeys } from '../store/keys.js';

export interface LimiterSettings {
  windowSeconds: number;
  maxPerAccount: number;
  maxPerAddress: number;
}

export class LoginLimiter {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly s: LimiterSettings,
  ) {}

  /** Throws too_many_attempts (with the seconds to wait) when either counter is at its limit. */
  async check(account: string, address: string): Promise<void> {
    const acct = this.keys.loginFailures('account', account);
    const addr = this.keys.loginFailures('address', address);
    const [a, at, b, bt] = await Promise.all([this.redis.get(acct), this.redis.pttl(acct), this.redis.get(addr), this.redis.pttl(addr)]);
    const waits: number[] = [];
    if (Number(a ?? 0) >= this.s.maxPerAccount) waits.push(at);
    if (Number(b ?? 0) >= this.s.maxPerAddress) waits.push(bt);
    if (waits.length > 0) {
      const seconds = Math.max(1, Math.ceil(Math.max(...waits) / 1000));
      throw new AppError('too_many_attempts', `Too many failed sign-ins; try again in ${seconds} s.`, undefined, [['retry-after', String(seconds)]]);
    }
  }

  async fail(account: string, address: string): Promise<void> {
    // One transaction per counter: each is its own owner (account, address), so its own slot.
    await Promise.all(
      [this.keys.loginFailures('account', account), this.keys.loginFailures('address', address)].map((key) => this.redis.multi().incr(key).expire(key, this.s.windowSeconds, 'NX').exec()),
    );
  }

  /** A successful sign-in clears the account's counter (not the address's). */
  async succeed(account: string): Promise<void> {
    await this.redis.del(this.keys.loginFailures('account', account));
  }
}
