// Registers this bridge's (layout, target) pairs as live destinations: one sorted-set member per
// pair, scored with its expiry, marked down while the display is unreachable (presenceMember). The
// heartbeat renews them and follows each display's state; a graceful stop removes them at once; a
// crash lets them expire within presenceTtlMs, which the gateway's destinationCount follows.
import type { RedisClient } from '../runtime/redis.js';
import { presenceKey, presenceMember } from '../schemas/redis-keys.js';

export interface PresenceEntry {
  layoutId: string;
  target: string;
}

export class Presence {
  private timer: NodeJS.Timeout | undefined;
  /** ms since the epoch of the last successful heartbeat */
  lastBeat = 0;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly bridgeId: string,
    private readonly entries: PresenceEntry[],
    private readonly ttlMs: number,
    private readonly onError: (e: unknown) => void,
    private readonly now: () => number = Date.now,
    /** the (layout, target) pairs whose display is unreachable now, as `layoutId|target` */
    private readonly down: () => ReadonlySet<string> = () => new Set(),
  ) {}

  /** One pipeline per layout (its keys share the layout's hash tag, so this works on Redis Cluster too). */
  async beat(): Promise<void> {
    const now = this.now();
    const down = this.down(); // once a beat: up to 256 layouts of 64 targets each
    const byLayout = new Map<string, string[]>();
    for (const e of this.entries) byLayout.set(e.layoutId, [...(byLayout.get(e.layoutId) ?? []), e.target]);
    await Promise.all(
      [...byLayout].map(async ([layoutId, targets]) => {
        const key = presenceKey(this.prefix, layoutId);
        const pipe = this.redis.pipeline();
        for (const target of targets) {
          const up = !down.has(`${layoutId}|${target}`);
          pipe.zadd(key, now + this.ttlMs, presenceMember(this.bridgeId, target, up));
          pipe.zrem(key, presenceMember(this.bridgeId, target, !up));
        }
        pipe.zremrangebyscore(key, '-inf', now);
        pipe.pexpire(key, this.ttlMs * 10);
        const failed = (await pipe.exec())?.find(([err]) => err)?.[0];
        if (failed) throw failed;
      }),
    );
    this.lastBeat = now;
  }

  /** Beats now, then every third of the TTL (so two beats can be lost before the entry expires). */
  async start(): Promise<void> {
    await this.beat();
    this.timer = setInterval(() => void this.beat().catch(this.onError), Math.max(100, Math.floor(this.ttlMs / 3)));
    this.timer.unref();
  }

  /** Stops beating and removes the entries (a graceful stop counts down at once). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await Promise.all(this.entries.map((e) => this.redis.zrem(presenceKey(this.prefix, e.layoutId), presenceMember(this.bridgeId, e.target), presenceMember(this.bridgeId, e.target, false))));
  }
}
