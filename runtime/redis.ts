// Redis connections for the long-running processes and the CLI: one server (a URL) or Redis
// Cluster (seed nodes), behind one type. Commands fail fast while Redis is away: no offline
// queue, no resend of a command that was in flight when the connection dropped (an XADD must
// never be sent twice), a per-command timeout so a black-holed Redis turns into an error instead
// of a hang. The connection itself keeps reconnecting. A blocking reader needs a command timeout
// longer than its BLOCK.
import { Cluster, Redis, type ClusterOptions, type RedisOptions, type StandaloneConnectionOptions } from 'ioredis';
import { StandaloneConnector } from 'ioredis/built/connectors/index.js';
import type { Logger } from './log.js';
import { checkTlsHandshake, hasTlsSettings, RedisTlsError, tlsOptions, tlsProblem, type RedisTlsFiles } from './redis-tls.js';

/** A connection to one server or to a cluster: the commands the code uses work on both. */
export type RedisClient = Redis | Cluster;

/** Where Redis is: one server, or a cluster's seed nodes (`host:port`, or URLs whose credentials and TLS apply to every node). */
export interface RedisTarget {
  url: string;
  clusterNodes?: readonly string[] | undefined;
  /** CA, client certificate and server name for rediss:// (see redis-tls.ts) */
  tls?: RedisTlsFiles | undefined;
}

/** Whether the target speaks TLS: a rediss:// URL, or a rediss:// seed node. */
function usesTls(target: RedisTarget): boolean {
  return target.clusterNodes?.length ? target.clusterNodes.some((n) => n.startsWith('rediss://')) : target.url.startsWith('rediss://');
}

/**
 * Checks the target's TLS settings without connecting: the files are readable PEM, and they go
 * with a rediss:// URL (a CA file beside a plain redis:// URL would otherwise be silently unused).
 * Throws a RedisTlsError that names the setting.
 */
export function checkTlsSettings(target: RedisTarget): void {
  if (!hasTlsSettings(target.tls)) return;
  if (!usesTls(target)) throw new RedisTlsError(`REDIS_TLS_* settings are given but Redis is not reached over TLS: use a rediss:// URL${target.clusterNodes?.length ? ' for the seed nodes' : ''}`);
  tlsOptions(target.tls);
}

/**
 * Whether the target's certificate (and ours) are accepted, tried with one TLS handshake to its
 * (first) host: the problem in words naming the file, or null (also when Redis cannot be reached
 * now: that is not a settings problem, and is retried like any outage).
 */
export async function tlsHandshakeProblem(target: RedisTarget): Promise<string | null> {
  if (!usesTls(target)) return null;
  const first = target.clusterNodes?.length ? target.clusterNodes.find((n) => n.startsWith('rediss://'))! : target.url;
  const url = new URL(first);
  return checkTlsHandshake(url.hostname.replace(/^\[|\]$/g, ''), Number(url.port || 6379), target.tls);
}

/**
 * Whether a failed connection was a certificate problem (never retried), in words naming the file;
 * else null. The error alone may not tell: a server that wants a client certificate (TLS 1.3)
 * resets the connection once the client writes, so one handshake that only reads asks it.
 */
export async function tlsFailure(target: RedisTarget, ...errors: unknown[]): Promise<string | null> {
  if (!usesTls(target)) return null;
  for (const e of errors) {
    const err = e as Error & { lastNodeError?: Error };
    const problem = e ? tlsProblem(err.lastNodeError ?? e, target.tls) : null;
    if (problem) return problem;
  }
  return tlsHandshakeProblem(target);
}

export interface FailFastSettings {
  name: string;
  commandTimeoutMs: number;
  /** reconnection attempt n waits n × this, up to maxReconnectDelayMs */
  reconnectStepMs: number;
  maxReconnectDelayMs: number;
  /** on a cluster: SSUBSCRIBE goes to the channel's shard (a subscriber per master, made as needed) */
  shardedSubscribers?: boolean;
  /**
   * a subscriber: commands sent while disconnected wait for the connection instead of failing.
   * ioredis subscribes again by itself on every reconnect and nothing can catch that call; with a
   * link that drops again at once it rejected, unhandled ("Stream isn't writeable"), and ended a test
   * run. A subscriber sends nothing a request waits on, so waiting costs nobody.
   */
  subscriber?: boolean;
}

/**
 * ioredis's connector, with a lasting 'error' listener on each socket it opens. ioredis listens
 * for a socket's errors with `once`, but a TLS socket can fail twice: after a TLS 1.3 handshake a
 * server that refuses the client's certificate sends an alert, then resets the link, and the
 * second error, with no listener left, would end the process. The first error still reaches
 * ioredis (and so the 'error' event and the reconnect); a later one on the same dead socket adds
 * nothing and is dropped here.
 */
class TwiceFailingSocketConnector extends StandaloneConnector {
  constructor(options: unknown) {
    super(options as StandaloneConnectionOptions);
  }

  override async connect(...args: Parameters<StandaloneConnector['connect']>): ReturnType<StandaloneConnector['connect']> {
    const stream = await super.connect(...args);
    stream.on('error', () => undefined);
    return stream;
  }
}

export function failFastRedisOptions(s: FailFastSettings): RedisOptions {
  return {
    Connector: TwiceFailingSocketConnector,
    connectionName: s.name,
    lazyConnect: true,
    // Off: the gateway's group commit already sends one call per stream and turn, and ioredis's
    // auto-pipelining wrapped each in a Pipeline of its own, a turn later: 3.2 µs of CPU per
    // /action (the action ablation bench, since removed, 3 ABBA pairs: 3.6, 4.6, 1.4; row auto-pipelining).
    enableAutoPipelining: false,
    // RESP2, as every reply here was written against (ioredis 6 speaks RESP3 by default), and a
    // restricted ACL user needs no HELLO
    protocol: 2,
    enableOfflineQueue: s.subscriber ?? false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    commandTimeout: s.commandTimeoutMs,
    connectTimeout: 1000,
    retryStrategy: (attempt) => Math.min(s.reconnectStepMs * attempt, s.maxReconnectDelayMs),
  };
}

/** "a:1,b:2" or "redis://:pw@a:1,b:2" -> the list; empty or unset -> undefined. */
export function parseClusterNodes(text: string | undefined): string[] | undefined {
  const nodes = (text ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  return nodes.length > 0 ? nodes : undefined;
}

/** One seed node as ioredis takes it, and the credentials and TLS its URL carries (if it is one). */
function seed(node: string): { host: string; port: number; auth: RedisOptions } {
  const url = new URL(node.includes('://') ? node : `redis://${node}`);
  const auth: RedisOptions = {};
  if (url.username) auth.username = decodeURIComponent(url.username);
  if (url.password) auth.password = decodeURIComponent(url.password);
  if (url.protocol === 'rediss:') auth.tls = {};
  return { host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 6379), auth };
}

/**
 * A client with the fail-fast options. With cluster nodes it is an ioredis Cluster: MOVED and ASK
 * are followed, the slot map is refreshed after a failover (and every 2 s), and a command to a slot
 * with no master fails after about 0.4 s of retries instead of waiting for the failover.
 */
export function createRedisClient(target: RedisTarget, s: FailFastSettings): RedisClient {
  const options = failFastRedisOptions(s);
  const tls = hasTlsSettings(target.tls) && usesTls(target) ? tlsOptions(target.tls) : undefined;
  if (!target.clusterNodes?.length) return new Redis(target.url, tls ? { ...options, tls } : options);
  const seeds = target.clusterNodes.map(seed);
  const found = seeds.find((n) => n.auth.password || n.auth.tls)?.auth ?? {};
  const auth = tls ? { ...found, tls } : found;
  const { enableAutoPipelining, enableOfflineQueue, lazyConnect, retryStrategy: _, ...perNode } = options;
  const cluster: ClusterOptions = {
    lazyConnect,
    enableOfflineQueue,
    enableAutoPipelining,
    scaleReads: 'master',
    // A command to a master that just died is retried every 100 ms, 4 times at most, then fails:
    // about 0.4 s of waiting at worst (a 503 at the gateway), instead of ioredis's default 16.
    maxRedirections: 4,
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 100,
    // the slot map is also re-read every 2 s, so a failover is followed even by an idle client
    slotsRefreshInterval: 2000,
    slotsRefreshTimeout: 1000,
    clusterRetryStrategy: (attempt) => Math.min(s.reconnectStepMs * attempt, s.maxReconnectDelayMs),
    redisOptions: { ...perNode, ...auth },
    shardedSubscribers: s.shardedSubscribers ?? false,
  };
  return new Cluster(
    seeds.map(({ host, port }) => ({ host, port })),
    cluster,
  );
}

/** What to call Redis in messages and logs: the URL without its password, or the seed nodes. */
export function describeTarget(target: RedisTarget): string {
  return target.clusterNodes?.length ? `the cluster at ${target.clusterNodes.map((n) => redactUrl(n)).join(',')}` : redactUrl(target.url);
}

/** Why a connection failed, in words: a cluster's "Failed to refresh slots cache" names the node's own error too. */
export function connectionFailure(e: unknown): string {
  const err = e as Error & { lastNodeError?: Error };
  return err.lastNodeError ? `${err.message} ${err.lastNodeError.message}` : String(err?.message ?? e);
}

/** The URL without its password, for messages and logs. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/([^@/]*)@/, (_m, auth: string) => `//${auth.includes(':') ? auth.split(':')[0] + ':***' : '***'}@`);
}

export function connectBridgeRedis(target: RedisTarget, name: string, commandTimeoutMs: number): RedisClient {
  // reconnect attempts at most 500 ms apart, so a link back after a long outage is used within about that
  const redis = createRedisClient(target, { name, commandTimeoutMs, reconnectStepMs: 100, maxReconnectDelayMs: 500 });
  redis.on('error', () => {}); // surfaced through failing commands; without a listener ioredis prints them
  return redis;
}

/** A command ioredis gave up waiting for (commandTimeout): on an open connection, a sign the link went silent. */
export function isCommandTimeout(e: unknown): boolean {
  return e instanceof Error && e.message === 'Command timed out';
}

/**
 * PINGs the connection every `everyMs` while it is open; a PING unanswered within the command
 * timeout means the link went silent (no FIN, no RST: a half-open TCP connection waits for minutes),
 * so the connection is closed and made again. For a connection that never blocks (BLOCK would hold
 * the PING). Returns the timer.
 */
export function replaceSilentConnection(redis: RedisClient, everyMs: number, onReplaced: () => void): NodeJS.Timeout {
  let inFlight = false;
  const timer = setInterval(() => {
    if (inFlight || redis.status !== 'ready') return;
    inFlight = true;
    redis
      .ping()
      .catch((e: unknown) => {
        if (!isCommandTimeout(e) || redis.status !== 'ready') return;
        onReplaced();
        redis.disconnect(true);
      })
      .finally(() => (inFlight = false));
  }, everyMs);
  timer.unref();
  return timer;
}

/**
 * Connects, retrying with backoff until it works or `stopped()` says to give up. A certificate
 * that does not verify is a settings problem, not an outage: it throws at once, naming the file.
 */
export async function connectWithRetry(redis: RedisClient, log: Logger, stopped: () => boolean, target?: RedisTarget): Promise<void> {
  let delay = 100;
  let lastError: unknown = null;
  const noted = (e: unknown) => (lastError = e);
  for (;;) {
    redis.on('error', noted);
    try {
      await redis.connect();
      return;
    } catch (e) {
      const tls = target && (await tlsFailure(target, e, lastError));
      if (tls) {
        redis.disconnect();
        throw new Error(`cannot connect to Redis at ${describeTarget(target)}: ${tls}`);
      }
      if (stopped()) throw e;
      log.warn({ err: (e as Error).message, retryInMs: delay }, 'cannot reach Redis yet; retrying');
      redis.disconnect();
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 2000);
    } finally {
      redis.off('error', noted);
    }
  }
}
