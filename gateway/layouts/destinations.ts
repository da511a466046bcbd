// destinationCount for GET /layout: the number of live (layout, display) registrations the bridges
// keep in the layout's presence set, and how many of those displays their bridge can reach (the
// team page's "2 of 3 displays reachable"). Read at most once a second per layout and refreshed in
// the background, so discovery never waits on it once warm.
import type { RedisClient } from '../../runtime/redis.js';
import type { RedisKeys } from '../store/keys.js';
import { presenceUp } from '../../schemas/redis-keys.js';

export interface Destinations {
  /** live registrations: destinationCount */
  count: number;
  /** of those, the displays their bridge can reach */
  reachable: number;
}

const FRESH_MS = 1000;
/** A layout asked for within this long is in use (the gauge of displays reports it). */
const IN_USE_MS = 5 * 60_000;

export class DestinationCounts {
  private readonly counts = new Map<string, { value: Destinations; at: number; refreshing: boolean; askedAt: number }>();

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly now: () => number = Date.now,
  ) {}

  private async read(layoutId: string): Promise<Destinations> {
    const members = await this.redis.zrangebyscore(this.keys.destinations(layoutId), `(${this.now()}`, '+inf');
    return { count: members.length, reachable: members.filter(presenceUp).length };
  }

  /** destinationCount; waits for Redis only the first time a layout is asked for, and reports 0 if that read fails. */
  async count(layoutId: string): Promise<number> {
    return (await this.both(layoutId)).count;
  }

  /** The same, for a metric: a layout read this way is not taken as in use. */
  async countQuietly(layoutId: string): Promise<number> {
    return (await this.both(layoutId, false)).count;
  }

  /** The registrations and the reachable displays, as count() reads them. */
  async both(layoutId: string, asked = true): Promise<Destinations> {
    const c = this.counts.get(layoutId);
    const now = this.now();
    if (!c) {
      const value = await this.read(layoutId).catch(() => ({ count: 0, reachable: 0 }));
      this.counts.set(layoutId, { value, at: now, refreshing: false, askedAt: asked ? now : -Infinity });
      return value;
    }
    if (asked) c.askedAt = now;
    if (now - c.at >= FRESH_MS && !c.refreshing) {
      c.refreshing = true;
      this.read(layoutId)
        .then((value) => Object.assign(c, { value, at: this.now() }))
        .catch(() => {})
        .finally(() => (c.refreshing = false));
    }
    return c.value;
  }

  /** The layouts asked for within IN_USE_MS; those asked for before are forgotten. */
  recent(): string[] {
    const from = this.now() - IN_USE_MS;
    for (const [layoutId, c] of this.counts) if (c.askedAt < from) this.counts.delete(layoutId);
    return [...this.counts.keys()];
  }
}
