// destinationCount for GET /layout: the number of live (layout, display) registrations the bridges
// keep in the layout's presence set. Read at most once a second per layout and refreshed in the
// background, so discovery never waits on it once warm.
import type { RedisClient } from '../../runtime/redis.js';
import type { RedisKeys } from '../store/keys.js';

const FRESH_MS = 1000;

export class DestinationCounts {
  private readonly counts = new Map<string, { value: number; at: number; refreshing: boolean }>();

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly now: () => number = Date.now,
  ) {}

  private async read(layoutId: string): Promise<number> {
    return this.redis.zcount(this.keys.destinations(layoutId), `(${this.now()}`, '+inf');
  }

  /** The count; waits for Redis only the first time a layout is asked for, and reports 0 if that read fails. */
  async count(layoutId: string): Promise<number> {
    const c = this.counts.get(layoutId);
    const now = this.now();
    if (!c) {
      const value = await this.read(layoutId).catch(() => 0);
      this.counts.set(layoutId, { value, at: now, refreshing: false });
      return value;
    }
    if (now - c.at >= FRESH_MS && !c.refreshing) {
      c.refreshing = true;
      this.read(layoutId)
        .then((value) => Object.assign(c, { value, at: this.now() }))
        .catch(() => {})
        .finally(() => (c.refreshing = false));
    }
    return c.value;
  }
}
