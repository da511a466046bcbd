// The gateway's sixth step: the live channel (live/channel.ts) on the configured limits, mounted on
// the HTTP server, following the caches (a revoked key, a changed layout, rotated signing keys close
// or update its sockets). The layouts' light looks are read from their streams (live/light-feed.ts,
// each layout's blocking reads on a connection of its own), its counts and refusals are metrics,
// and the phones' clock figures are published for the team page's sync panel every FIGURES_EVERY_MS.
import type { Logger } from '../../runtime/log.js';
import type { GatewayConfig } from '../config.js';
import { TrustedProxies } from '../http/client-address.js';
import type { HttpServer } from '../http/server.js';
import { LiveChannel } from '../live/channel.js';
import { LIGHT_BLOCK_MS, LightFeed } from '../live/light-feed.js';
import type { GatewayMetrics } from '../metrics.js';
import { FIGURES_EVERY_MS } from '../store/clock-figures.js';
import { connectServiceRedis } from '../store/redis.js';
import type { Stores } from '../store/stores.js';
import { SummaryLog } from '../summary-log.js';
import type { Caches } from './caches.js';
import type { Connections } from './connect.js';
import type { Services } from './services.js';

export interface LiveStep {
  live: LiveChannel;
  /** closes the sockets (spread over LIVE_DRAIN_MS, each told when to come back), then stops the light feed and the figures */
  stop(): Promise<void>;
}

export function startLive(c: Connections, stores: Stores, caches: Caches, s: Services, server: HttpServer, config: GatewayConfig, metrics: GatewayMetrics, log: Logger): LiveStep {
  const { now } = c;
  const lightSkipped = new SummaryLog(log, 'warn', "light stream entries that are no look for their layout's canvas (docs/light.md), skipped; count of the interval", 60_000, now);
  const light = new LightFeed(stores.keys, {
    connect: () => connectServiceRedis({ ...c.settings, name: 'audience-gateway-light', commandTimeoutMs: LIGHT_BLOCK_MS + c.settings.commandTimeoutMs }),
    canvas: async (layoutId) => (await caches.layouts.get(layoutId))?.light ?? null,
    onUnavailable: s.liveUnavailable,
    onUnusable: (reason) => lightSkipped.count(reason),
  });
  const { deps } = s;
  const services = { layouts: deps.layouts, destinations: deps.destinations, tokens: deps.tokens, cors: deps.cors, intake: s.intake, claims: s.claims };
  const live = new LiveChannel(services, s.crowdFeed, {
    maxFrameBytes: config.maxBodyBytes, maxSockets: config.liveMaxSockets, newSocketsPerSecond: config.liveNewSocketsPerSecond,
    bufferBytes: config.liveBufferBytes, slowCloseMs: config.liveSlowCloseMs, now, serverNow: c.preciseNow,
    idleTimeoutSeconds: config.liveIdleTimeoutSeconds, expiryNoticeMs: config.liveExpiryNoticeSeconds * 1000, socketsPerParticipant: config.liveSocketsPerParticipant,
    opensPerParticipantPerMinute: config.liveOpensPerParticipantPerMinute, drainMs: config.liveDrainMs,
    refusedUpgradesPerAddressPerSecond: config.liveRefusedUpgradesPerAddressPerSecond, trustProxy: TrustedProxies.parse(config.trustProxy),
    onError: (e) => log.error({ err: e }, 'unexpected error on the live channel'),
    onUnavailable: s.liveUnavailable,
    onSkipped: (frames = 1) => metrics.liveSkipped.inc(frames),
    onClosed: (code) => metrics.liveCloses.labels(String(code)).inc(),
    onLostAtUpgrade: () => metrics.liveLostAtUpgrade.inc(),
    onClockReport: (layoutId, zone, ms) => metrics.clockUncertainty.series(layoutId, zone).observe(ms / 1000),
  }, light);
  const signingKeyActive = (kid: string) => caches.keyring.status(kid) === 'active';
  caches.follow({
    keyRevoked: (keyId) => live.keyRevoked(keyId),
    layoutChanged: (layoutId) => live.layoutChanged(layoutId),
    signingKeysChanged: () => live.signingKeysChanged(signingKeyActive),
    rechecked: () => live.recheck((keyId) => caches.apiKeys.isRevoked(keyId), signingKeyActive),
  });
  live.mount(server.app);
  const figures = setInterval(() => void stores.clockFigures.publish(s.source, live.clockSnapshots(), Date.now()).catch(() => s.liveUnavailable('clock figures')), FIGURES_EVERY_MS);
  metrics.watchLive(() => live.sockets);
  metrics.liveSocketsLimit.set(config.liveMaxSockets);
  metrics.watchDestinations(() => [...deps.destinations.recent(), ...live.layouts()], (layoutId) => deps.destinations.countQuietly(layoutId));
  return {
    live,
    async stop() {
      await live.closeAll(); // listening has stopped: the sockets go over LIVE_DRAIN_MS, and come back to the gateways that stay, spread out
      light.stop();
      clearInterval(figures);
      lightSkipped.flush();
    },
  };
}
