// The live channel of a gateway process, wired to the rest of it: the sockets (live/channel.ts) on
// the configured limits, the layouts' light looks read from their streams (live/light-feed.ts, each
// layout's blocking reads on a connection of its own), its counts and refusals as metrics, and the
// phones' clock figures published for the team page's sync panel every FIGURES_EVERY_MS.
import type { Logger } from '../runtime/log.js';
import type { GatewayConfig } from './config.js';
import type { GatewayMetrics } from './metrics.js';
import { TrustedProxies } from './http/client-address.js';
import { LiveChannel } from './live/channel.js';
import type { CrowdFeed } from './live/crowd-feed.js';
import { LIGHT_BLOCK_MS, LightFeed } from './live/light-feed.js';
import type { LiveServices } from './live/socket.js';
import { FIGURES_EVERY_MS } from './store/clock-figures.js';
import { connectServiceRedis, type RedisSettings } from './store/redis.js';
import type { Stores } from './store/stores.js';
import { SummaryLog } from './summary-log.js';

export interface LiveSetup {
  config: GatewayConfig;
  log: Logger;
  /** the deployment's time (Redis's), and the same to the µs for the clock exchanges */
  now: () => number;
  serverNow: () => number;
  /** how this process reaches Redis (the light feed opens its own connections) */
  redis: Omit<RedisSettings, 'name'>;
  stores: Stores;
  services: LiveServices;
  crowd: CrowdFeed;
  metrics: GatewayMetrics;
  /** Redis away: counted in the live channel's summary line */
  onUnavailable: (what: string) => void;
  /** this process's name in the shared figures */
  source: string;
}

/** The live channel, not yet mounted; stop() after it has closed its sockets. */
export function startLive(s: LiveSetup): { live: LiveChannel; stop(): void } {
  const { config, metrics } = s;
  const lightSkipped = new SummaryLog(s.log, 'warn', "light stream entries that are no look for their layout's canvas (docs/light.md), skipped; count of the interval", 60_000, s.now);
  let live: LiveChannel | null = null;
  const light = new LightFeed(s.stores.keys, {
    connect: () => connectServiceRedis({ ...s.redis, name: 'audience-gateway-light', commandTimeoutMs: LIGHT_BLOCK_MS + s.redis.commandTimeoutMs }),
    canvas: async (layoutId) => (await s.services.layouts.get(layoutId))?.light ?? null,
    held: (layoutId) => live?.holds(layoutId) ?? false,
    onLook: (layoutId, zone, text) => live?.lightLook(layoutId, zone, text),
    onUnavailable: s.onUnavailable,
    onUnusable: (reason) => lightSkipped.count(reason),
  });
  live = new LiveChannel(s.services, s.crowd, {
    maxFrameBytes: config.maxBodyBytes, maxSockets: config.liveMaxSockets, newSocketsPerSecond: config.liveNewSocketsPerSecond,
    bufferBytes: config.liveBufferBytes, slowCloseMs: config.liveSlowCloseMs, now: s.now, serverNow: s.serverNow,
    idleTimeoutSeconds: config.liveIdleTimeoutSeconds, expiryNoticeMs: config.liveExpiryNoticeSeconds * 1000, socketsPerParticipant: config.liveSocketsPerParticipant,
    opensPerParticipantPerMinute: config.liveOpensPerParticipantPerMinute, drainMs: config.liveDrainMs,
    refusedUpgradesPerAddressPerSecond: config.liveRefusedUpgradesPerAddressPerSecond, trustProxy: TrustedProxies.parse(config.trustProxy),
    onError: (e) => s.log.error({ err: e }, 'unexpected error on the live channel'),
    onUnavailable: s.onUnavailable,
    onSkipped: (frames = 1) => metrics.liveSkipped.inc(frames),
    onClosed: (code) => metrics.liveCloses.labels(String(code)).inc(),
    onLostAtUpgrade: () => metrics.liveLostAtUpgrade.inc(),
    onClockReport: (layoutId, zone, ms) => metrics.clockUncertainty.series(layoutId, zone).observe(ms / 1000),
  }, light);
  const channel = live;
  const figures = setInterval(() => void s.stores.clockFigures.publish(s.source, channel.clockSnapshots(), Date.now()).catch(() => s.onUnavailable('clock figures')), FIGURES_EVERY_MS);
  metrics.watchLive(() => channel.sockets);
  metrics.liveSocketsLimit.set(config.liveMaxSockets);
  return {
    live: channel,
    stop() {
      light.stop();
      clearInterval(figures);
      lightSkipped.flush();
    },
  };
}
