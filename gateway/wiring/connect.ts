// The gateway's first step: its connections to Redis and the deployment's clock. Four clients: one
// for commands, one subscribed to the cache invalidations, and two sharded subscribers (the live
// channel's crowd, and the crowd's moves between processes). What the gateway stores and compares
// is in Redis's clock (a test's own `now` aside), so the bridge reads an action's age right
// whatever either host's clock says.
import type { Logger } from '../../runtime/log.js';
import { RedisClock, clockOffsetProblem, registerClockMetrics, watchClockOffset } from '../../runtime/redis-clock.js';
import type { RedisClient } from '../../runtime/redis.js';
import { tlsVerificationOff } from '../../runtime/redis-tls.js';
import { redisTarget, type GatewayConfig } from '../config.js';
import type { GatewayMetrics } from '../metrics.js';
import { connectServiceRedis, type RedisSettings } from '../store/redis.js';
import { evictionProblem } from '../store/write-health.js';
import { SummaryLog } from '../summary-log.js';

export interface Connections {
  /** commands */
  redis: RedisClient;
  /** the cache invalidations (SUBSCRIBE) */
  subscriber: RedisClient;
  /** the live channel's crowd: SSUBSCRIBE to each layout's shard while this process holds its sockets */
  liveSubscriber: RedisClient;
  /** the crowd's moves between processes: SSUBSCRIBE to each layout's shard while this process counts participants of it */
  movesSubscriber: RedisClient;
  /** how this process reaches Redis (the light feed opens connections of its own) */
  settings: Omit<RedisSettings, 'name'>;
  /** the deployment's time (Redis's), and the same to the µs for the live channel's clock exchanges */
  now: () => number;
  preciseNow: () => number;
  /** the problems that do not stop this gateway serving: the clock far from Redis's, TLS unverified, an evicting Redis */
  notes(): (string | null)[];
  /** `restored` runs each time the command connection comes back (the caches then re-read everything) */
  watch(restored: () => Promise<void>): void;
  /** the gateway begins to stop: a connection lost from now on is part of it, not news */
  stopping(): void;
  stop(): void;
}

export async function connect(config: GatewayConfig, log: Logger, metrics: GatewayMetrics, testNow?: () => number): Promise<Connections> {
  const settings = { ...redisTarget(config), commandTimeoutMs: config.redisCommandTimeoutMs };
  const redis = await connectServiceRedis({ ...settings, name: 'audience-gateway' });
  const subscriber = await connectServiceRedis({ ...settings, name: 'audience-gateway-sub', subscriber: true });
  const liveSubscriber = await connectServiceRedis({ ...settings, name: 'audience-gateway-live', shardedSubscribers: true, subscriber: true });
  const movesSubscriber = await connectServiceRedis({ ...settings, name: 'audience-gateway-moves', shardedSubscribers: true, subscriber: true });
  const clients = [redis, subscriber, liveSubscriber, movesSubscriber];

  const clockErrors = new SummaryLog(log, 'warn', "could not read Redis's TIME for the clock offset; the last offset stays (count of the interval)", 60_000);
  const clock = new RedisClock(redis, () => clockErrors.count('time'), () => performance.timeOrigin + performance.now()); // to the µs, for the live channel's clock exchanges
  if (!testNow) {
    await clock.sync().catch(() => clockErrors.count('time'));
    clock.start();
  }
  registerClockMetrics(metrics.registry, 'audience_gateway_', () => clock.reading());
  const clockNote = () => clockOffsetProblem(clock.reading(), config.clockOffsetWarnMs);
  const clockWatch = watchClockOffset(clockNote, log);
  const tlsOff = tlsVerificationOff();
  if (tlsOff) log.warn(tlsOff);
  const eviction = await evictionProblem(redis).catch((e: unknown) => {
    log.warn({ err: e }, "could not read Redis's maxmemory-policy");
    return null;
  });
  if (eviction) log.warn({ policy: eviction.policy }, eviction.problem);

  let closing = false;
  return {
    redis,
    subscriber,
    liveSubscriber,
    movesSubscriber,
    settings,
    now: testNow ?? clock.now,
    preciseNow: testNow ?? clock.preciseNow,
    notes: () => [clockNote(), tlsOff, eviction?.problem ?? null],
    watch(restored) {
      // a connection coming back is logged; the command connection's also re-reads what is cached
      // (messages may have been missed, and Redis may have come back empty)
      watchConnection(redis, log, 'redis', () => closing, restored);
      watchConnection(subscriber, log, 'redis subscriber', () => closing);
      watchConnection(liveSubscriber, log, 'redis live subscriber', () => closing);
      watchConnection(movesSubscriber, log, 'redis crowd moves subscriber', () => closing);
    },
    stopping() {
      closing = true;
    },
    stop() {
      closing = true;
      clock.stop();
      clearInterval(clockWatch);
      clockErrors.flush();
      for (const client of clients) client.disconnect();
    },
  };
}

/** A subscription refused on a connection made again is tried again this often (ms) until it holds. */
const RESUBSCRIBE_EVERY_MS = 1000;

/**
 * Logs a lost connection (unless the gateway is closing) and calls `onRestored` when it is back.
 * A subscriber's connection made again subscribes again to what it listened to, and Redis may
 * refuse that (an ACL that no longer allows the channel, or the link lost again). The client tells
 * it as an error naming the command, and forgets those channels: they are logged and subscribed
 * to again every RESUBSCRIBE_EVERY_MS until it holds.
 */
function watchConnection(redis: RedisClient, log: Logger, what: string, closing: () => boolean, onRestored: () => Promise<void> = () => Promise.resolve()): void {
  redis.on('error', (e: Error & { command?: { name?: string; args?: unknown[] } }) => {
    const command = e.command?.name;
    const channels = (e.command?.args ?? []).map(String);
    if ((command !== 'subscribe' && command !== 'ssubscribe' && command !== 'psubscribe') || channels.length === 0 || closing()) return;
    log.error({ err: e.message, command, channels }, `${what}: Redis refused the subscription made again after a reconnect; trying again every ${RESUBSCRIBE_EVERY_MS / 1000} s`);
    let reason = e.message; // a retry's failure is logged when its reason changes (the ACL still refusing is said once)
    const again = () => {
      if (closing()) return;
      const made = command === 'subscribe' ? redis.subscribe(...channels) : command === 'ssubscribe' ? redis.ssubscribe(...channels) : redis.psubscribe(...channels);
      made.then(
        () => log.info({ command, channels }, `${what}: subscribed again`),
        (failed: unknown) => {
          const now = failed instanceof Error ? failed.message : String(failed);
          if (now !== reason) log.warn({ err: now, command, channels }, `${what}: the subscription is still refused; trying again every ${RESUBSCRIBE_EVERY_MS / 1000} s`);
          reason = now;
          setTimeout(again, RESUBSCRIBE_EVERY_MS).unref();
        },
      );
    };
    setTimeout(again, RESUBSCRIBE_EVERY_MS).unref();
  });
  let down = false;
  redis.on('close', () => {
    if (!down && !closing()) log.warn(`${what} connection lost; reconnecting`);
    down = true;
  });
  redis.on('ready', () => {
    if (down) {
      log.info(`${what} connection restored`);
      void onRestored();
    }
    down = false;
  });
}
