// Keeps this gateway's caches in step with Redis: a subscriber applies invalidation messages as
// they come, and a periodic re-check (plus a full one once subscribed and after every reconnect)
// catches any message that was missed while the subscriber was away.
import type { RedisClient } from '../../runtime/redis.js';
import { decodeInvalidation, type Invalidation } from './invalidation.js';
import type { RedisKeys } from './keys.js';

export interface CacheSync {
  apply(m: Invalidation): void;
  /** Re-reads everything cached; must not throw (log instead). */
  recheck(): Promise<void>;
}

export class InvalidationListener {
  private timer: NodeJS.Timeout | undefined;
  private subscribedOnce = false;

  constructor(
    private readonly subscriber: RedisClient,
    private readonly keys: RedisKeys,
    private readonly sync: CacheSync,
    private readonly recheckMs: number,
  ) {}

  async start(): Promise<void> {
    this.subscriber.on('message', (channel: string, text: string) => {
      if (channel !== this.keys.invalidationChannel()) return;
      const m = decodeInvalidation(text);
      if (m) this.sync.apply(m);
    });
    // ioredis re-subscribes by itself after a reconnect; anything published meanwhile was lost.
    this.subscriber.on('ready', () => {
      if (this.subscribedOnce) void this.sync.recheck();
    });
    await this.subscriber.subscribe(this.keys.invalidationChannel());
    this.subscribedOnce = true;
    // What the caller loaded before this subscription may have changed meanwhile, its message
    // unheard (a signing key rotated while this gateway started): read once more, now listening.
    await this.sync.recheck();
    this.timer = setInterval(() => void this.sync.recheck(), this.recheckMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.subscriber.disconnect();
  }
}
