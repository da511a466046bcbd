// Redis connections. Callers must fail fast while Redis is away: no offline queue, no retry of a
// command that was in flight when the connection dropped (an XADD must never be sent twice), and
// a per-command timeout so a black-holed Redis turns into 503 instead of a hang.
import { Redis, type RedisOptions } from 'ioredis';

/** Wraps a Redis call on the request path (metrics time it); `untimed` does nothing. */
export type RedisTimer = <T>(command: string, p: Promise<T>) => Promise<T>;
export const untimed: RedisTimer = (_command, p) => p;

export interface RedisSettings {
  url: string;
  commandTimeoutMs: number;
  name: string;
}

/** Options for long-running processes: reconnect forever (every 50-250 ms), fail commands at once meanwhile. */
export function serviceRedisOptions(s: RedisSettings): RedisOptions {
  return {
    connectionName: s.name,
    lazyConnect: true,
    enableAutoPipelining: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    commandTimeout: s.commandTimeoutMs,
    connectTimeout: 1000,
    retryStrategy: (attempt) => Math.min(50 * attempt, 250),
  };
}

/** Connects a client for a service; rejects if the first connection fails. */
export async function connectServiceRedis(s: RedisSettings): Promise<Redis> {
  const redis = new Redis(s.url, serviceRedisOptions(s));
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
