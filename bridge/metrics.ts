// The bridge's Prometheus metrics. The live counters (counters.ts) are mirrored at scrape time.
// Labels: `target` (a configured host:port) and `layout` (a configured layoutId) are bounded by
// the configuration (at most 256 layouts of at most 64 targets); nothing else is labelled.
import type { Redis } from 'ioredis';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { groupInfo } from './consumer.js';
import type { BridgeCounters, TargetCounters } from './counters.js';
import { collectProcessMetrics } from './ops-server.js';

const PER_TARGET: [keyof TargetCounters, string, string][] = [
  ['messages', 'audience_bridge_messages_sent_total', 'OSC messages sent, by target.'],
  ['bundles', 'audience_bridge_bundles_sent_total', 'OSC bundles sent, by target.'],
  ['datagrams', 'audience_bridge_datagrams_sent_total', 'UDP datagrams sent, by target.'],
  ['bytes', 'audience_bridge_bytes_sent_total', 'UDP payload bytes sent, by target.'],
  ['sendErrors', 'audience_bridge_send_errors_total', 'Failed or refused sends, by target (retried with backoff).'],
];

const TOTALS: [keyof BridgeCounters & ('read' | 'coalesced' | 'droppedStale' | 'deadLettered' | 'duplicates' | 'acked' | 'readErrors'), string, string][] = [
  ['read', 'audience_bridge_entries_read_total', 'Stream entries read.'],
  ['coalesced', 'audience_bridge_coalesced_total', 'Continuous-control messages superseded by a newer value before sending.'],
  ['droppedStale', 'audience_bridge_dropped_stale_total', 'Actions dropped for being older than maxAgeMs.'],
  ['deadLettered', 'audience_bridge_dead_lettered_total', 'Unusable entries copied to the dead-letter stream.'],
  ['duplicates', 'audience_bridge_duplicates_total', 'Entries dropped because their action id was already handled.'],
  ['acked', 'audience_bridge_entries_acked_total', 'Stream entries acknowledged.'],
  ['readErrors', 'audience_bridge_read_errors_total', 'Failed stream reads (retried with backoff).'],
];

export interface BridgeMetricsSources {
  counters: BridgeCounters;
  redis: Redis;
  prefix: string;
  bridgeId: string;
  layouts: readonly string[];
  /** ms since the epoch of the newest entry read, per layout */
  newestRead: () => ReadonlyMap<string, number>;
  lastHeartbeat: () => number;
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
    for (const [field, name, help] of TOTALS) {
      new Counter({
        name,
        help,
        registers: [this.registry],
        collect() {
          this.reset();
          this.inc(s.counters[field]);
        },
      });
    }
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
