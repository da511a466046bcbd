// The gateway's fourth step: what its routes and its live channel use. The budgets (per participant,
// per API key), the action log and the one action intake, the crowd's fold and its participants'
// claims between processes, moderation, audience tokens, the crowd feed, and the team page's
// sessions and sign-in limits.
import type { Logger } from '../../runtime/log.js';
import { ActionLog } from '../actions/action-log.js';
import { ActionIntake } from '../actions/intake.js';
import { ParticipantClaims } from '../actions/participant-claims.js';
import { LoginLimiter } from '../admin/login-limiter.js';
import { AdminGuard } from '../admin/guard.js';
import { unmatchableHash } from '../admin/passwords.js';
import { SessionStore } from '../admin/sessions.js';
import { AudienceTokens } from '../auth/audience-tokens.js';
import type { GatewayConfig } from '../config.js';
import { CrowdFold, type AggregatedControl } from '../crowd/crowd-fold.js';
import { CrowdRevocations } from '../crowd/crowd-revocations.js';
import { CorsPolicy } from '../http/cors.js';
import { DestinationCounts } from '../layouts/destinations.js';
import { MintLimits, ParticipantLimits, ratesOf } from '../limits/participant-limits.js';
import { CrowdFeed } from '../live/crowd-feed.js';
import type { GatewayMetrics } from '../metrics.js';
import { TextModeration } from '../moderation/moderation.js';
import type { RouteDeps } from '../routes/deps.js';
import { entryId } from '../store/entry-id.js';
import type { Stores } from '../store/stores.js';
import { WriteHealth } from '../store/write-health.js';
import { SummaryLog } from '../summary-log.js';
import type { Caches } from './caches.js';
import type { Connections } from './connect.js';

export interface Services {
  deps: RouteDeps;
  intake: ActionIntake;
  claims: ParticipantClaims;
  /** the crowd's values merged over every gateway process, for the live channel and the team page */
  crowdFeed: CrowdFeed;
  /** what the team page's routes use */
  admin: {
    stores: Stores;
    crowd: CrowdFeed;
    sessions: SessionStore;
    guard: AdminGuard;
    limiter: LoginLimiter;
    destinations: DestinationCounts;
    dummyPasswordHash: string;
    now: () => number;
  };
  moderationAdmin: { bounds: { perLayout: number; perParticipant: number; holdMs: number }; trim: { maxLen: number; retentionMs: number }; onDecided: (decision: string) => void };
  /** whether Redis takes writes: what /readyz answers */
  writes: WriteHealth;
  /** Redis away on the live channel: counted in one summary line */
  liveUnavailable: (what: string) => void;
  /** this process, as claims and crowd summaries name it */
  source: string;
  /** stops the budgets and the claims, retracts this process's crowd, and flushes the summary lines */
  stop(): Promise<void>;
}

export function startServices(c: Connections, stores: Stores, caches: Caches, config: GatewayConfig, metrics: GatewayMetrics, log: Logger): Services {
  const { redis, now } = c;
  const { layouts } = caches;
  const timed = <T>(command: string, p: Promise<T>) => metrics.redis(command, p);
  // a Redis outage would otherwise be a line per socket: one line per interval, with the count
  const liveMisses = new SummaryLog(log, 'warn', 'live channel: a page, a crowd subscription or a crowd summary could not be sent or published, or a light stream not read (Redis away?), or a crowd subscription that stopped delivering was made again; count of the interval', 10_000, now);
  // A flood of refusals is one log line per interval, not one per request.
  const refusals = new SummaryLog(log, 'warn', 'requests refused by a rate limit (count of the interval)', 10_000, now);
  const moderatedLog = new SummaryLog(log, 'warn', 'Strings refused by moderation (count of the interval, by reason)', 10_000, now);
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
  const revocations = new CrowdRevocations(crowd, layouts, () => liveMisses.count('crowd_revocations'));
  caches.follow({ layoutChanged: (layoutId) => revocations.layoutChanged(layoutId), rechecked: () => revocations.recheck() });
  const actionRates = {
    actions: { ratePerSecond: config.actionRatePerSecond, burst: config.actionBurst },
    strings: { ratePerSecond: config.stringRatePerSecond, burst: config.stringBurst },
  };
  const cachedLayout = (layoutId: string) => {
    const layout = layouts.get(layoutId);
    return layout instanceof Promise ? null : layout;
  };
  const claims = new ParticipantClaims(redis, c.movesSubscriber, stores.keys, source, crowd, {
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
  });
  const moderationBounds = { perLayout: config.moderationQueueMax, perParticipant: config.moderationQueuePerParticipant, holdMs: config.moderationHoldSeconds * 1000 };
  const deps: RouteDeps = {
    apiKeys: caches.apiKeys,
    tokens: new AudienceTokens(
      { issuer: config.tokenIssuer, audience: config.tokenAudience, ttlSeconds: config.tokenTtlSeconds, cacheMax: config.tokenCacheMax, renewGraceSeconds: config.tokenRenewGraceSeconds },
      caches.keyring,
      caches.apiKeys,
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
  const crowdFeed = new CrowdFeed(c.liveSubscriber, stores.keys, {
    now,
    onUnavailable: (what) => liveMisses.count(what),
    probe: (channel, text) => redis.spublish(channel, text),
  });
  const sessions = new SessionStore(redis, stores.keys, config.adminSessionIdleSeconds, config.adminSessionMaxSeconds, now);
  metrics.watchCrowd(() => crowd.participants());
  return {
    deps,
    // one action intake for POST /action and the live channel's actions alike
    intake: new ActionIntake(deps),
    claims,
    crowdFeed,
    admin: {
      stores,
      crowd: crowdFeed,
      sessions,
      guard: new AdminGuard(sessions, config),
      limiter: new LoginLimiter(redis, stores.keys, { windowSeconds: config.adminLoginWindowSeconds, maxPerAccount: config.adminLoginMaxPerAccount, maxPerAddress: config.adminLoginMaxPerAddress, maxInFlight: config.adminLoginMaxInFlight }),
      destinations: deps.destinations,
      dummyPasswordHash: unmatchableHash(),
      now,
    },
    moderationAdmin: {
      bounds: moderationBounds,
      trim: { maxLen: config.streamMaxLen, retentionMs: config.streamRetentionSeconds * 1000 },
      onDecided: (decision: string) => metrics.moderationDecisions.inc({ decision }),
    },
    writes,
    liveUnavailable: (what) => liveMisses.count(what),
    source,
    async stop() {
      await crowd.retract(); // the bridge stops counting this process now, not when its lease runs out
      claims.stop();
      participants.stop();
      mints.stop();
      crowdFeed.stop();
      refusals.flush();
      moderatedLog.flush();
      writes.flush();
      liveMisses.flush();
    },
  };
}
