// Whether Redis takes writes: every refused write on the request path (used memory past maxmemory,
// a failed snapshot, a replica, too few replicas) is counted by reason, logged as one line per
// interval with its count, and makes /readyz say so for a while; /readyz also says so before it
// happens, once used memory passes a share of maxmemory. It says so in a note on a 200, not with a
// 503: every gateway shares that Redis, so a 503 would take every pod out of its balancer at once,
// and with them the reads and live sockets that still work. The used share is a gauge to alert on.
import { Counter, Gauge, type Registry } from 'prom-client';
import type { RedisClient } from '../../runtime/redis.js';
import type { Logger } from '../../runtime/log.js';
import type { WriteRefusal } from '../errors.js';
import { SummaryLog } from '../summary-log.js';

/** /readyz says "refusing writes" this long after the last refusal. */
export const REFUSAL_MEMORY_MS = 5000;

/** A scrape reads Redis's memory again when the last reading is this old. */
const RATIO_FRESH_MS = 5000;

export class WriteHealth {
  private readonly refused: Counter<'reason'>;
  private readonly memoryGauge: Gauge;
  /** what the last readiness check found of the writes, for /readyz's note */
  private writesNote: string | null = null;
  private ratio = 0;
  private ratioAt = -Infinity;
  private readonly log: SummaryLog;
  private last: { at: number; reason: WriteRefusal } | null = null;

  constructor(
    registry: Registry,
    log: Logger,
    /** the process's request-path client: what /readyz pings and the gauge reads */
    private readonly redis: RedisClient,
    /** used memory at or past this share of maxmemory makes the gateway not ready */
    private readonly memoryShare: number,
    private readonly now: () => number = Date.now,
  ) {
    this.refused = new Counter({ name: 'audience_gateway_redis_writes_refused_total', help: 'Writes on the request path that Redis refused while up, by reason: oom (maxmemory), misconf (a failed snapshot), readonly, noreplicas. Each was answered 503 unavailable.', labelNames: ['reason'], registers: [registry] });
    for (const r of ['oom', 'misconf', 'readonly', 'noreplicas'] as const) this.refused.labels(r).inc(0);
    this.memoryGauge = new Gauge({ name: 'audience_gateway_redis_memory_used_ratio', help: "Redis's used memory as a share of its maxmemory, the fullest master's, as last read (by /readyz, or by a scrape when that reading is over 5 s old); 0 without maxmemory.", registers: [registry], collect: async () => this.collectRatio() });
    this.log = new SummaryLog(log, 'error', 'Redis refuses writes; answering 503 unavailable (count of the interval)', 10_000, now);
  }

  /** One write refused for `reason` (answered 503). */
  refusedWrite(reason: WriteRefusal, detail: string): void {
    this.last = { at: this.now(), reason };
    this.refused.labels(reason).inc();
    this.log.count(reason, detail);
  }

  /**
   * /readyz: not ready (the reason) only while this process cannot reach Redis. What it finds of
   * the writes (refused, or memory near maxmemory) is kept for note(): the same Redis serves every
   * gateway, and a 503 would take them all out of rotation at once.
   */
  async ready(): Promise<string | null> {
    try {
      await this.redis.ping();
    } catch (e) {
      return `Redis unreachable (${(e as Error).message})`;
    }
    this.writesNote = await this.problem(this.redis).catch((e: unknown) => `Redis does not answer INFO (${(e as Error).message})`);
    return null;
  }

  /** What the last readiness check found of the writes, or null: a note on /readyz's 200. */
  note(): string | null {
    return this.writesNote;
  }

  /** Why writes cannot be trusted to succeed now, or null: a recent refusal, or used memory near maxmemory. */
  private async problem(redis: RedisClient): Promise<string | null> {
    if (this.last && this.now() - this.last.at < REFUSAL_MEMORY_MS) {
      return `Redis refuses writes (${this.last.reason}, ${this.now() - this.last.at} ms ago)`;
    }
    const { used, max } = await this.memory(redis);
    if (max > 0 && used >= max * this.memoryShare) {
      return `Redis memory at ${((100 * used) / max).toFixed(1)} % of maxmemory (${used} of ${max} bytes; noted from ${Math.round(this.memoryShare * 100)} %)`;
    }
    return null;
  }

  /** The fullest master's used memory and its maxmemory (0: none), read now; the gauge keeps the share. */
  private async memory(redis: RedisClient): Promise<{ used: number; max: number }> {
    let fullest = { used: 0, max: 0 };
    for (const node of nodesOf(redis)) {
      const info = await node.info('memory');
      const used = Number(/^used_memory:(\d+)/m.exec(info)?.[1] ?? 0);
      const max = Number(/^maxmemory:(\d+)/m.exec(info)?.[1] ?? 0);
      if (max > 0 && (fullest.max === 0 || used / max > fullest.used / fullest.max)) fullest = { used, max };
    }
    this.ratio = fullest.max > 0 ? fullest.used / fullest.max : 0;
    this.ratioAt = this.now();
    return fullest;
  }

  /** A scrape: the share as last read, read again when older than RATIO_FRESH_MS (a Redis away keeps the last). */
  private async collectRatio(): Promise<void> {
    // a Redis away keeps the last reading: /readyz and redis_errors say it is away
    if (this.now() - this.ratioAt >= RATIO_FRESH_MS) await this.memory(this.redis).catch(() => {});
    this.memoryGauge.set(this.ratio);
  }

  flush(): void {
    this.log.flush();
  }
}

/**
 * Why Redis may evict what the gateway keeps (its maxmemory-policy is not noeviction: allkeys-*
 * evicts any key, volatile-* the keys with a time to live, such as revoked participants, mutes and
 * idempotency records), naming the policy; null on noeviction. Read from INFO, which the gateway's
 * user may send (CONFIG may be refused it).
 */
export async function evictionProblem(redis: RedisClient): Promise<{ policy: string; problem: string } | null> {
  for (const node of nodesOf(redis)) {
    const policy = /^maxmemory_policy:(\S+)/m.exec(await node.info('memory'))?.[1];
    if (policy && policy !== 'noeviction') {
      return { policy, problem: `Redis's maxmemory-policy ${policy} can evict the system of record (API keys, revocations, mutes, idempotency records): set maxmemory-policy noeviction` };
    }
  }
  return null;
}

/** The servers to ask: one, or every master of a cluster. */
function nodesOf(redis: RedisClient): RedisClient[] {
  return 'nodes' in redis && typeof redis.nodes === 'function' ? redis.nodes('master') : [redis];
}
