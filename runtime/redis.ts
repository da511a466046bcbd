// Redis connections for long-running processes (the bridge here; the gateway builds on it).
// Commands fail fast while Redis is away: no offline queue, no resend of a command that was in
// flight when the connection dropped (an XADD must never be sent twice), a per-command timeout
// so a black-holed Redis turns into an error instead of a hang. The connection itself keeps
// reconnecting. A blocking reader needs a command timeout longer than its BLOCK.
import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from './log.js';

export interface FailFastSettings {
  name: string;
  commandTimeoutMs: number;
  /** reconnection attempt n waits n × this, up to maxReconnectDelayMs */
  reconnectStepMs: number;
  maxReconnectDelayMs: number;
  /** batch the commands of one event-loop turn into one write (the gateway's hot path) */
  autoPipelining?: boolean;
}

export function failFastRedisOptions(s: FailFastSettings): RedisOptions {
  return {
    connectionName: s.name,
    lazyConnect: true,
    enableAutoPipelining: s.autoPipelining === true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    commandTimeout: s.commandTimeoutMs,
    connectTimeout: 1000,
    retryStrategy: (attempt) => Math.min(s.reconnectStepMs * attempt, s.maxReconnectDelayMs),
  };
}

export function connectBridgeRedis(url: string, name: string, commandTimeoutMs: number): Redis {
  const redis = new Redis(url, failFastRedisOptions({ name, commandTimeoutMs, reconnectStepMs: 100, maxReconnectDelayMs: 2000 }));
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
