// The bridge's Prometheus metrics. The live counters (counters.ts) are mirrored at scrape time.
// Labels: `target` (a configured host:port) and `layout` (a configured layoutId) are bounded by
// the configuration (at most 256 layouts of at most 64 targets); the crowd's gauges add `lid`, an
// aggregated control of a configured layout (crowd-metrics.ts); nothing else is labelled.
import type { RedisClient } from '../runtime/redis.js';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { groupInfo } from './stream-group.js';
import type { BridgeCounters, LayoutCounters, TargetCounters } from './counters.js';
import { collectProcessMetrics } from '../runtime/ops-server.js';
import { registerCrowdMetrics, type CrowdSource } from './crowd-metrics.js';

const PER_TARGET: [keyof TargetCounters, string, string][] = [
  ['messages', 'audience_bridge_messages_sent_total', 'OSC messages sent, by target.'],
  ['bundles', 'audience_bridge_bundles_sent_total', 'OSC bundles sent, by target.'],
  ['datagrams', 'audience_bridge_datagrams_sent_total', 'UDP datagrams sent, by target.'],
  ['bytes', 'audience_bridge_bytes_sent_total', 'UDP payload bytes sent, by target.'],
  ['sendErrors', 'audience_bridge_send_errors_total', 'Failed or refused sends, by target (retried with backoff).'],
  ['unrouted', 'audience_bridge_unrouted_dropped_total', 'Actions, crowd values and cues a target was not sent because none of its routes takes them and its unrouted is drop, by target.'],
];

/** Per-layout counters; read = sent + coalesced + duplicates + dead_lettered + dropped_stale + lost + crowd_summaries + pending. */
const PER_LAYOUT: [Exclude<keyof LayoutCounters, 'lostTrimmed' | 'lostUnread'>, string, string][] = [
  ['read', 'audience_bridge_entries_read_total', 'Stream entries read, by layout.'],
  ['sent', 'audience_bridge_entries_sent_total', 'Stream entries whose action went out to at least one target, by layout.'],
  ['coalesced', 'audience_bridge_coalesced_total', 'Continuous-control entries superseded by a newer value before sending, by layout.'],
  ['duplicates', 'audience_bridge_duplicates_total', 'Entries dropped because their action id was already handled, by layout.'],
  ['deadLettered', 'audience_bridge_dead_lettered_total', 'Unusable entries copied to the dead-letter stream, by layout.'],
  ['deadLetterFailures', 'audience_bridge_dead_letter_failures_total', 'Unusable entries whose copy to the dead-letter stream Redis refused (acked anyway, logged), by layout.'],
  ['droppedStale', 'audience_bridge_dropped_stale_total', 'Actions dropped for being older than maxAgeMs, by layout.'],
  ['summaries', 'audience_bridge_crowd_summaries_total', 'Crowd summaries (one per gateway process, aggregated control and fold tick) merged into crowd values, by layout.'],
  ['acked', 'audience_bridge_entries_acked_total', 'Stream entries acknowledged, by layout.'],
  ['ackFailures', 'audience_bridge_ack_failures_total', 'Failed XACK calls, by layout (their ids are retried on later ticks).'],
  ['acksAbandoned', 'audience_bridge_acks_abandoned_total', 'Entry ids whose XACK failed 5 times and was given up (they stay pending; a re-read is deduplicated), by layout.'],
  ['readErrors', 'audience_bridge_read_errors_total', 'Failed stream reads (retried with backoff), by layout.'],
  ['settleErrors', 'audience_bridge_lost_count_errors_total', 'Failed counts of entries trimmed before they were read (tried again a second later; the output is not affected), by layout.'],
  ['groupsRecreated', 'audience_bridge_groups_recreated_total', 'Times the consumer group or stream was missing and was created again, by layout.'],
  ['tickErrors', 'audience_bridge_tick_errors_total', 'Send ticks that failed unexpectedly, by layout.'],
];

export interface BridgeMetricsSources {
  counters: BridgeCounters;
  redis: RedisClient;
  prefix: string;
  bridgeId: string;
  layouts: readonly string[];
  /** ms since the epoch of the newest entry read, per layout */
  newestRead: () => ReadonlyMap<string, number>;
  /** entries of a layout read and not yet settled */
  pending: (layoutId: string) => number;
  lastHeartbeat: () => number;
  /** each layout's crowd values and cues */
  crowd?: readonly CrowdSource[];
  /** each (layout, target) and whether its display is reachable */
  displays?: () => readonly { layoutId: string; target: string; up: boolean }[];
  now?: () => number;
}

export class BridgeMetrics {
  readonly registry = new Registry();
  readonly lateness = new Histogram({
    name: 'audience_bridge_tick_lateness_seconds',
    help: 'How late each send tick started against its schedule.',
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1],
    registers: [this.registry],
  });

  constructor(s: BridgeMetricsSources) {
    const now = s.now ?? Date.now;
    collectProcessMetrics(this.registry, 'audience_bridge_');
    registerCrowdMetrics(this.registry, s.crowd ?? []);
    for (const [field, name, help] of PER_TARGET) {
      new Counter({
        name,
        help,
        labelNames: ['target'],
        registers: [this.registry],
        collect() {
          this.reset();
          for (const [target, c] of s.counters.targets) this.labels(target).inc(c[field]);
        },
      });
    }
    for (const [field, name, help] of PER_LAYOUT) {
      new Counter({
        name,
        help,
        labelNames: ['layout'],
        registers: [this.registry],
        collect() {
          this.reset();
          for (const layout of s.layouts) this.labels(layout).inc(s.counters.layout(layout)[field]);
        },
      });
    }
    new Counter({
      name: 'audience_bridge_entries_lost_total',
      help: 'Entries lost, by layout and reason: trimmed (read by an earlier run of the bridge, then its data trimmed or deleted before it was sent), trimmed_unread (trimmed or deleted before this bridge had its data).',
      labelNames: ['layout', 'reason'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const layout of s.layouts) {
          this.labels(layout, 'trimmed').inc(s.counters.layout(layout).lostTrimmed);
          this.labels(layout, 'trimmed_unread').inc(s.counters.layout(layout).lostUnread);
        }
      },
    });
    new Gauge({
      name: 'audience_bridge_target_up',
      help: 'Whether a display is reachable (1) or not (0), by layout and target: a TCP target while connected; a UDP target while its datagrams (or, when idle, an empty bundle a second) are not refused (ICMP port unreachable).',
      labelNames: ['layout', 'target'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const d of s.displays?.() ?? []) this.labels(d.layoutId, d.target).set(d.up ? 1 : 0);
      },
    });
    new Gauge({
      name: 'audience_bridge_entries_pending',
      help: 'Entries read and not yet settled (queued for a target or awaiting confirmation), by layout.',
      labelNames: ['layout'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const layout of s.layouts) this.labels(layout).set(s.pending(layout));
      },
    });
    new Counter({
      name: 'audience_bridge_notify_failures_total',
      help: 'sd_notify messages (READY, STATUS, WATCHDOG, STOPPING) that systemd-notify failed to deliver.',
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(s.counters.notifyFailures);
      },
    });
    new Gauge({
      name: 'audience_bridge_consumer_lag_entries',
      help: "Entries in the layout's stream not yet delivered to this bridge's group (XINFO GROUPS lag).",
      labelNames: ['layout'],
      registers: [this.registry],
      async collect() {
        this.reset();
        await Promise.all(
          s.layouts.map(async (layout) => {
            const group = await groupInfo(s.redis, s.prefix, s.bridgeId, layout).catch(() => null);
            if (group) this.labels(layout).set(group.lag);
          }),
        );
      },
    });
    new Gauge({
      name: 'audience_bridge_consumer_lag_seconds',
      help: 'Age (gateway receive time to now) of the newest entry read, per layout: how far behind live the reading is.',
      labelNames: ['layout'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [layout, ts] of s.newestRead()) this.labels(layout).set(Math.max(0, (now() - ts) / 1000));
      },
    });
    new Gauge({
      name: 'audience_bridge_heartbeat_age_seconds',
      help: 'Time since the last successful presence heartbeat.',
      registers: [this.registry],
      collect() {
        const last = s.lastHeartbeat();
        this.set(last ? (now() - last) / 1000 : 0);
      },
    });
  }
}
