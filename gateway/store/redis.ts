// The gateway's Redis connections: the fail-fast options of runtime/redis.ts (a failed command
// becomes 503 unavailable), with quick reconnects; and one-shot tool clients.
// Both work on one server and on Redis Cluster.
import { connectionFailure, createRedisClient, describeTarget, tlsFailure, type RedisClient, type RedisTarget } from '../../runtime/redis.js';

/** Wraps a Redis call on the request path (metrics time it); `untimed` does nothing. */
export type RedisTimer = <T>(command: string, p: Promise<T>) => Promise<T>;
export const untimed: RedisTimer = (_command, p) => p;

export interface RedisSettings extends RedisTarget {
  commandTimeoutMs: number;
  name: string;
  /** a cluster client whose SSUBSCRIBE goes to each channel's shard */
  shardedSubscribers?: boolean;
  /** a subscriber: its commands wait for a connection instead of failing (runtime/redis.ts) */
  subscriber?: boolean;
}

/** Connects a client for the gateway (reconnecting every 50-250 ms); rejects if the first connection fails. */
export function connectServiceRedis(s: RedisSettings): Promise<RedisClient> {
  return firstConnection(s, createRedisClient(s, { name: s.name, commandTimeoutMs: s.commandTimeoutMs, reconnectStepMs: 50, maxReconnectDelayMs: 250, ...(s.shardedSubscribers && { shardedSubscribers: true }), ...(s.subscriber && { subscriber: true }) }));
}

/** A client for one-shot tools (audiencectl): one connection attempt, a clear error if Redis is not there. */
export function connectToolRedis(target: RedisTarget): Promise<RedisClient> {
  return firstConnection(target, createRedisClient(target, { name: 'audiencectl', commandTimeoutMs: 5000, reconnectStepMs: 100, maxReconnectDelayMs: 100 }));
}

/** The client once its first connection is made; else an error that says why (TLS named as such) and which setting to look at. */
async function firstConnection(target: RedisTarget, redis: RedisClient): Promise<RedisClient> {
  let lastError = '';
  // Later errors surface as command failures and 'close'/'ready' events; without a listener ioredis logs them to stderr.
  let failure: unknown = null;
  redis.on('error', (e: Error) => ((lastError = connectionFailure(e)), (failure ??= e)));
  try {
    await redis.connect();
  } catch (e) {
    redis.disconnect();
    const tls = await tlsFailure(target, e, failure);
    if (tls) throw new Error(`cannot connect to Redis at ${describeTarget(target)}: ${tls}`);
    throw new Error(`cannot reach Redis at ${describeTarget(target)}: ${lastError || connectionFailure(e)}; set ${target.clusterNodes?.length ? 'REDIS_CLUSTER_NODES' : 'REDIS_URL'}`);
  }
  return redis;
}

export { redactUrl } from '../../runtime/redis.js';
