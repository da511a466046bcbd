// The bridge's Redis connections. Commands fail fast while Redis is away (the read loop backs
// off and retries); a blocking reader gets a command timeout longer than its BLOCK.
import { Redis } from 'ioredis';
import type { Logger } from './log.js';

export function connectBridgeRedis(url: string, name: string, commandTimeoutMs: number): Redis {
  const redis = new Redis(url, {
    connectionName: name,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    commandTimeout: commandTimeoutMs,
    connectTimeout: 1000,
    retryStrategy: (attempt) => Math.min(100 * attempt, 2000),
  });
  redis.on('error', () => {}); // surfaced through failing commands; without a listener ioredis prints them
  return redis;
}

/** Connects, retrying with backoff until it works or `stopped()` says to give up. */
export async function connectWithRetry(redis: Redis, log: Logger, stopped: () => boolean): Promise<void> {
  let delay = 100;
  for (;;) {
    try {
      await redis.connect();
      return;
    } catch (e) {
      if (stopped()) throw e;
      log.warn({ err: (e as Error).message, retryInMs: delay }, 'cannot reach Redis yet; retrying');
      redis.disconnect();
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 2000);
    }
  }
}
