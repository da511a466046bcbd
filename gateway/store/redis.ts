// The gateway's Redis connections: the fail-fast options of bridge/redis.ts (a failed command
// becomes 503 unavailable), with auto-pipelining and quick reconnects; and one-shot tool clients.
import { Redis } from 'ioredis';
import { failFastRedisOptions } from '../../runtime/redis.js';

/** Wraps a Redis call on the request path (metrics time it); `untimed` does nothing. */
export type RedisTimer = <T>(command: string, p: Promise<T>) => Promise<T>;
export const untimed: RedisTimer = (_command, p) => p;

export interface RedisSettings {
  url: string;
  commandTimeoutMs: number;
  name: string;
}

/** Connects a client for the gateway (reconnecting every 50-250 ms); rejects if the first connection fails. */
export async function connectServiceRedis(s: RedisSettings): Promise<Redis> {
  const redis = new Redis(s.url, failFastRedisOptions({ name: s.name, commandTimeoutMs: s.commandTimeoutMs, reconnectStepMs: 50, maxReconnectDelayMs: 250, autoPipelining: true }));
  let lastError = '';
  // Later errors surface as command failures and 'close'/'ready' events; without a listener ioredis logs them to stderr.
  redis.on('error', (e: Error) => (lastError = e.message));
  try {
    await redis.connect();
  } catch (e) {
    redis.disconnect();
    throw new Error(`cannot reach Redis at ${redactUrl(s.url)}: ${lastError || (e as Error).message}; set REDIS_URL`);
  }
  return redis;
}

/** A client for one-shot tools (audiencectl): a single connection attempt, a clear error if Redis is not there. */
export async function connectToolRedis(url: string): Promise<Redis> {
  const redis = new Redis(url, {
    connectionName: 'audiencectl',
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    commandTimeout: 5000,
    retryStrategy: () => null,
  });
  redis.on('error', () => {});
  try {
    await redis.connect();
  } catch (e) {
    redis.disconnect();
    throw new Error(`cannot reach Redis at ${redactUrl(url)} (${(e as Error).message}); set REDIS_URL`);
  }
  return redis;
}

/** The URL without its password, for messages and logs. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/([^@/]*)@/, (_m, auth: string) => `//${auth.includes(':') ? auth.split(':')[0] + ':***' : '***'}@`);
}
