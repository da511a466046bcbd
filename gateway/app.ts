// Builds a running gateway from a configuration: Redis -> stores -> caches -> invalidation -> HTTP.
// main.ts calls it for the real process; tests call it in-process with port 0.
import { loadFunctions } from '../runtime/redis-functions.js';
import { bridgeFunctionsSource } from '../schemas/bridge-functions.js';
import { tlsVerificationOff } from '../runtime/redis-tls.js';
import type { RedisClient } from '../runtime/redis.js';
import { ActionLog } from './actions/action-log.js';
import { CrowdFold, type AggregatedControl } from './crowd/crowd-fold.js';
import { CrowdRevocations } from './crowd/crowd-revocations.js';
import { entryId } from './store/entry-id.js';
import { adminApiRoutes } from './admin/api.js';
import { AdminGuard } from './admin/guard.js';
import { LoginLimiter } from './admin/login-limiter.js';
import { adminPageRoutes } from './admin/page.js';
import { clientSchemaModules, playPageRoutes } from './play/page.js';
import { asyncApiRoute, openApiRoute } from './routes/openapi.js';
import { schemaRoutes } from './routes/schemas.js';
import { hashPassword } from './admin/passwords.js';
import { SessionStore } from './admin/sessions.js';
import { ApiKeyAuth } from './auth/api-keys.js';
import { AudienceTokens } from './auth/audience-tokens.js';
import { SigningKeyring } from './auth/signing-keyring.js';
import { recordBounds, redisTarget, type GatewayConfig } from './config.js';
import { CorsPolicy } from './http/cors.js';
import { HttpServer } from './http/server.js';
import { DestinationCounts } from './layouts/destinations.js';
import { LayoutCache } from './layouts/layout-cache.js';
import { ActionIntake } from './actions/intake.js';
import type { LiveChannel } from './live/channel.js';
import { CrowdFeed } from './live/crowd-feed.js';
import { startLive } from './live-setup.js';
import { lightApiRoutes } from './admin/light-api.js';
import { MintLimits, ParticipantLimits, ratesOf } from './limits/participant-limits.js';
import { SummaryLog } from './summary-log.js';
import { TextModeration } from './moderation/moderation.js';
import { moderationApiRoutes } from './admin/moderation-api.js';
import { recordApiRoute } from './admin/record-api.js';
import { evictionProblem, WriteHealth } from './store/write-health.js';
import type { Logger } from '../runtime/log.js';
import { GatewayMetrics } from './metrics.js';
import { startOpsServer } from '../runtime/ops-server.js';
import { RedisClock, clockOffsetProblem, registerClockMetrics, watchClockOffset } from '../runtime/redis-clock.js';
import { actionRoutes } from './routes/action.js';
import type { RouteDeps } from './routes/deps.js';
import { fallbackRoutes } from './routes/fallback.js';
import { layoutRoute } from './routes/layout.js';
import { tokenRoute } from './routes/token.js';
import { connectServiceRedis } from './store/redis.js';
import { ParticipantClaims } from './actions/participant-claims.js';
import { hasLegacyKeys, migrateLegacyKeys } from './store/migrate.js';
import { loadKek } from './store/signing-kek.js';
import { createStores, type Stores } from './store/stores.js';
import type { Invalidation } from './store/invalidation.js';
import { InvalidationListener } from './store/cache-sync.js';

/** How long a stopping gateway waits for in-flight requests to be answered. */
export const DRAIN_MS = 5000;

export interface Gateway {
  readonly port: number;
  /** port of /metrics, /healthz, /readyz */
  readonly opsPort: number;
  readonly stores: Stores;
  readonly deps: RouteDeps;
  /** Why the gateway is not ready (Redis does not answer), or null: what /readyz says. */
  ready(): Promise<string | null>;
  /** What /readyz adds to a 200: the host's clock far from Redis's, or null. */
  note(): string | null;
  /** Stop listening, answer what is in flight (at most drainMs), disconnect from Redis. */
  close(drainMs?: number): Promise<void>;
}

/** The metric label of each invalidation message (a layout message is a page switch or a re-import). */
const INVALIDATION_LABEL: Record<Invalidation['kind'], string> = {
  'key-revoked': 'key_revoked',
  'key-created': 'key_created',
  layout: 'page_switch',
  'signing-keys': 'signing_keys',
};

export interface GatewayOptions {
  log: Logger;
  now?: () => number;
}

export async function startGateway(config: GatewayConfig, opts: GatewayOptions): Promise<Gateway> {
  const { log } = opts;
  const kek = loadKek(config.signingKekFile); // before any connection: a missing or unreadable one stops the start here
  const settings = { ...redisTarget(config), commandTimeoutMs: config.redisCommandTimeoutMs };
  const redis = await connectServiceRedis({ ...settings, name: 'audience-gateway' });
  const subscriber = await connectServiceRedis({ ...settings, name: 'audience-gateway-sub', subscriber: true });
  // the live channel's crowd: SSUBSCRIBE to each layout's shard while this process holds its sockets
  const liveSubscriber = await connectServiceRedis({ ...settings, name: 'audience-gateway-live', shardedSubscribers: true, subscriber: true });
  // the crowd's moves between processes: SSUBSCRIBE to each layout's shard while this process counts participants of it
  const movesSubscriber = await connectServiceRedis({ ...settings, name: 'audience-gateway-moves', shardedSubscribers: true, subscriber: true });

  // What this gateway stores and compares is in Redis's clock (a test's own `now` aside), so the
  // bridge reads an action's age right whatever either host's clock says.
  const clockErrors = new SummaryLog(log, 'warn', "could not read Redis's TIME for the clock offset; the last offset stays (count of the interval)", 60_000);
  const clock = new RedisClock(redis, () => clockErrors.count('time'), () => performance.timeOrigin + performance.now()); // to the µs, for the live channel's clock exchanges
  if (!opts.now) {
    await clock.sync().catch(() => clockErrors.count('time'));
    clock.start();
  }
  const now = opts.now ?? clock.now;
  const clockNote = () => clockOffsetProblem(clock.reading(), config.clockOffsetWarnMs);
  const clockWatch = watchClockOffset(clockNote, log);
  const tlsOff = tlsVerificationOff();
  if (tlsOff) log.warn(tlsOff);
  const eviction = await evictionProblem(redis).catch((e: unknown) => {
    log.warn({ err: e }, "could not read Redis's maxmemory-policy");
    return null;
  });
  if (eviction) log.warn({ policy: eviction.policy }, eviction.problem);
  const metrics = new GatewayMetrics();
  registerClockMetrics(metrics.registry, 'audience_gateway_', () => clock.reading());
  const timed = <T>(command: string, p: Promise<T>) => metrics.redis(command, p);
  const stores = createStores(redis, config.redisPrefix, kek, recordBounds(config));
  // Data of version 0.1 moves to the tagged key names before anything reads it (idempotent: several
  // gateways starting at once all finish the same job).
  if (await hasLegacyKeys(redis, config.redisPrefix)) {
    const { moved } = await migrateLegacyKeys(redis, config.redisPrefix);
    log.info({ moved }, 'moved 0.1 keys to their tagged names');
  }
  // the venue bridges' Redis functions, on every master (a bridge's user may call them, not load them)
  await loadFunctions(redis, bridgeFunctionsSource());
  // signing secrets written in plain before the KEK are sealed before anything else reads them
  const sealed = await stores.signingKeys.sealPlain();
  if (sealed > 0) log.info({ sealed, kek: kek.id }, 'sealed signing keys stored in plain under the key-encryption key');
  const keyring = new SigningKeyring(stores.signingKeys); // its reload makes a signing key when Redis has none
  metrics.watchSigningKeys(() => keyring.unreadable);
  /** what /readyz adds to a 200: each problem that does not stop this gateway serving, or null */
  const readyNote = () => [writes.note(), clockNote(), tlsOff, eviction?.problem ?? null, keyring.problem()].filter((n) => n !== null).join('; ') || null;
  const apiKeys = new ApiKeyAuth(stores.apiKeys, now, (e) => log.warn({ err: e }, 'could not record lastUsedAt'), timed);
  const layouts = new LayoutCache(stores.layouts, timed);
  try {
    await Promise.all([keyring.reload(), apiKeys.reload()]);
    keyring.opensSome();
  } catch (e) {
    // a KEK that does not open the stored keys (or Redis failing now): no half-started gateway
    for (const client of [redis, subscriber, liveSubscriber, movesSubscriber]) client.disconnect();
    throw e;
  }

  /** the live channel and the crowd's revocations, once made (invalidation messages can come before they are) */
  const sockets: { live?: LiveChannel; revocations?: CrowdRevocations } = {};
  const recheckAll = (): Promise<void> =>
    Promise.all([apiKeys.reload(), keyring.reload(), layouts.recheck()]).then(
      () => {
        sockets.revocations?.recheck();
        sockets.live?.recheck((keyId) => apiKeys.isRevoked(keyId), (kid) => keyring.status(kid) === 'active');
      },
      (e: unknown) => log.warn({ err: e }, 'cache re-check failed'),
    );
  const listener = new InvalidationListener(
    subscriber,
    stores.keys,
    {
      apply(m) {
        metrics.invalidations.labels(INVALIDATION_LABEL[m.kind]).inc();
        if (m.kind === 'key-revoked') {
          apiKeys.keyRevoked(m.id);
          sockets.live?.keyRevoked(m.id);
        } else if (m.kind === 'key-created') apiKeys.keyCreated(m.id);
        else if (m.kind === 'layout') {
          layouts.invalidate(m.id);
          sockets.revocations?.layoutChanged(m.id);
          sockets.live?.layoutChanged(m.id);
        }
        else
          keyring.reload().then(
            () => sockets.live?.signingKeysChanged((kid) => keyring.status(kid) === 'active'),
            (e: unknown) => log.warn({ err: e }, 'signing key reload failed'),
          );
      },
      recheck: recheckAll,
    },
    config.cacheRecheckMs,
  );
  await listener.start();
  // Either connection coming back re-reads everything cached (the listener does it for its own):
  // messages may have been missed, and Redis may have come back empty (the keyring's reload then
  // makes a new signing key).
  let closing = false;
  watchConnection(redis, log, 'redis', () => closing, recheckAll);
  watchConnection(subscriber, log, 'redis subscriber', () => closing);
  watchConnection(liveSubscriber, log, 'redis live subscriber', () => closing);
  watchConnection(movesSubscriber, log, 'redis crowd moves subscriber', () => closing);

  // a Redis outage would otherwise be a line per socket: one line per interval, with the count
  const liveMisses = new SummaryLog(log, 'warn', 'live channel: a page, a crowd subscription or a crowd summary could not be sent or published, or a light stream not read (Redis away?), or a crowd subscription that stopped delivering was made again; count of the interval', 10_000, now);
  // A flood of refusals is one log line per interval, not one per request.
  const refusals = new SummaryLog(log, 'warn', 'requests refused by a rate limit (count of the interval)', 10_000, now);
  const participants = new ParticipantLimits(config.participantsTracked, now, (kind) => refusals.count(kind));
  const mints = new MintLimits({ ratePerSecond: config.mintRatePerSecond, burst: config.mintBurst }, now, () => refusals.count('mints'));
  const writes = new WriteHealth(metrics.registry, log, redis, config.redisMemoryReadyShare, now);
  const actions = new ActionLog(
    redis,
    stores.keys,
    { maxLen: config.streamMaxLen, retentionMs: config.streamRetentionSeconds * 1000 },
    timed,
    (e) => log.error({ err: e }, 'an append waiter threw'),
    (reason, detail) => writes.refusedWrite(reason, detail),
    now,
  );
  const source = `gw-${entryId()}`;
  const crowd = new CrowdFold(actions, source, config.crowdFoldMs, { now, maxParticipants: config.crowdMaxParticipants, onEvicted: () => metrics.crowdEvictions.inc(),
    publish: (layoutId, payload) => void redis.spublish(stores.keys.liveChannel(layoutId), payload).catch(() => liveMisses.count('live_crowd_publish')) });
  sockets.revocations = new CrowdRevocations(crowd, layouts, () => liveMisses.count('crowd_revocations'));
  const actionRates = {
    actions: { ratePerSecond: config.actionRatePerSecond, burst: config.actionBurst },
    strings: { ratePerSecond: config.stringRatePerSecond, burst: config.stringBurst },
  };
  const cachedLayout = (layoutId: string) => {
    const layout = layouts.get(layoutId);
    return layout instanceof Promise ? null : layout;
  };
  const claims = new ParticipantClaims(redis, movesSubscriber, stores.keys, source, crowd, {
    handOff: (sub) => participants.handOff(sub),
    takeOver: (layoutId, sub, handed, spent, spentStrings) => participants.takeOver(sub, handed, spent, spentStrings, ratesOf(actionRates, cachedLayout(layoutId)?.limits)),
  }, {
    now,
    opensPerMinute: config.liveOpensPerParticipantPerMinute,
    onUnavailable: (what) => liveMisses.count(what),
    onMoved: (handedOver) => {
      metrics.participantMoves.inc();
      if (!handedOver) metrics.handoverTimeouts.inc();
    },
    controlOf: (layoutId, lid) => {
      const control = cachedLayout(layoutId)?.controls.get(lid);
      return control?.aggregate ? (control as AggregatedControl) : undefined;
    },
    hasSockets: (layoutId, sub) => sockets.live?.hasParticipant(layoutId, sub) ?? false,
    replaced: (layoutId, sub) => sockets.live?.replaced(layoutId, sub),
  });
  const moderatedLog = new SummaryLog(log, 'warn', 'Strings refused by moderation (count of the interval, by reason)', 10_000, now);
  const moderationBounds = { perLayout: config.moderationQueueMax, perParticipant: config.moderationQueuePerParticipant, holdMs: config.moderationHoldSeconds * 1000 };
  const deps: RouteDeps = {
    apiKeys,
    tokens: new AudienceTokens(
      { issuer: config.tokenIssuer, audience: config.tokenAudience, ttlSeconds: config.tokenTtlSeconds, cacheMax: config.tokenCacheMax, renewGraceSeconds: config.tokenRenewGraceSeconds },
      keyring,
      apiKeys,
      now,
      (hit) => metrics.tokenCacheLookup(hit),
    ),
    layouts,
    destinations: new DestinationCounts(redis, stores.keys, now),
    actions,
    crowd,
    cors: new CorsPolicy(config.corsOrigins),
    metrics,
    keys: stores.keys,
    idempotency: { windowSeconds: config.idempotencyTtlSeconds, keysPerParticipant: config.idempotencyKeysPerParticipant },
    participants,
    claims,
    mints,
    moderation: new TextModeration(stores.moderation, moderationBounds, metrics, moderatedLog),
    actionRates,
  };

  const server = new HttpServer({
    maxBodyBytes: config.maxBodyBytes,
    now,
    onError: (e, head) => log.error({ err: e, requestId: head.id }, 'unexpected error'),
    observe: (route, status, seconds, code) => metrics.observeRequest(route, status, seconds, code),
  });
  const sessions = new SessionStore(redis, stores.keys, config.adminSessionIdleSeconds, config.adminSessionMaxSeconds, now);
  const liveCrowd = new CrowdFeed(liveSubscriber, stores.keys, {
    now,
    onChanged: (layoutId, values) => sockets.live?.crowdChanged(layoutId, values),
    onUnavailable: (what) => liveMisses.count(what),
    probe: (channel, text) => redis.spublish(channel, text),
  });
  const admin = {
    stores,
    crowd: liveCrowd,
    sessions,
    guard: new AdminGuard(sessions, config),
    limiter: new LoginLimiter(redis, stores.keys, { windowSeconds: config.adminLoginWindowSeconds, maxPerAccount: config.adminLoginMaxPerAccount, maxPerAddress: config.adminLoginMaxPerAddress, maxInFlight: config.adminLoginMaxInFlight }),
    destinations: deps.destinations,
    dummyPasswordHash: await hashPassword(`unknown-${Math.random()}`),
    now,
  };
  server.mount(layoutRoute(deps)).mount(tokenRoute(deps)).mount(openApiRoute()).mount(asyncApiRoute()).mount(schemaRoutes(clientSchemaModules()));
  const moderationAdmin = {
    bounds: moderationBounds,
    trim: { maxLen: config.streamMaxLen, retentionMs: config.streamRetentionSeconds * 1000 },
    onDecided: (decision: string) => metrics.moderationDecisions.inc({ decision }),
  };
  // one action intake for POST /action and the live channel's actions alike
  const intake = new ActionIntake(deps);
  for (const r of [...actionRoutes(deps, intake), ...adminApiRoutes(admin), ...lightApiRoutes(admin), ...moderationApiRoutes(admin, moderationAdmin), recordApiRoute(admin), ...adminPageRoutes(), ...playPageRoutes()]) server.mount(r);
  const liveServices = { layouts: deps.layouts, destinations: deps.destinations, tokens: deps.tokens, cors: deps.cors, intake, claims };
  const liveSetup = startLive({
    config, log, now, serverNow: opts.now ?? clock.preciseNow, redis: settings, stores, services: liveServices, crowd: liveCrowd, metrics, onUnavailable: (what) => liveMisses.count(what), source,
  });
  const live = liveSetup.live;
  live.mount(server.app);
  sockets.live = live;
  for (const r of fallbackRoutes(server.patterns())) server.mount(r); // 405 with Allow on known paths, 404 elsewhere
  const port = await server.listen(config.host, config.port);
  const ready = () => writes.ready();
  metrics.watchCrowd(() => deps.crowd.participants());
  metrics.watchDestinations(() => [...deps.destinations.recent(), ...live.layouts()], (layoutId) => deps.destinations.countQuietly(layoutId));
  const ops = await startOpsServer(config.opsHost, config.opsPort, metrics.registry, ready, readyNote).catch(async (e: unknown) => {
    await server.close(0);
    throw new Error(`cannot listen on ${config.opsHost}:${config.opsPort} for /metrics: ${(e as Error).message} (OPS_PORT and OPS_HOST choose others)`);
  });

  return {
    port,
    opsPort: ops.port,
    ready,
    note: readyNote,
    stores,
    deps,
    async close(drainMs = DRAIN_MS) {
      closing = true; // at once: Redis going away from now on is part of stopping, not news
      await server.close(drainMs);
      await live.closeAll(); // listening has stopped: the sockets go over LIVE_DRAIN_MS, and come back to the gateways that stay, spread out
      await deps.crowd.retract(); // the bridge stops counting this process now, not when its lease runs out
      claims.stop();
      participants.stop();
      mints.stop();
      refusals.flush();
      moderatedLog.flush();
      writes.flush();
      liveMisses.flush();
      await ops.close();
      clock.stop();
      clearInterval(clockWatch);
      clockErrors.flush();
      listener.stop();
      liveCrowd.stop();
      liveSetup.stop();
      redis.disconnect();
    },
  };
}

/** Logs a lost connection (unless the gateway is closing) and calls `onRestored` when it is back. */
function watchConnection(redis: RedisClient, log: Logger, what: string, closing: () => boolean, onRestored: () => Promise<void> = () => Promise.resolve()): void {
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
