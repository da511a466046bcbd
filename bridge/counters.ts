// The bridge's live counters: STATUS= for systemd, the log, and Prometheus (metrics.ts).
// Per layout, every entry read ends in exactly one outcome, so the counters add up:
//   read = sent + coalesced + duplicates + deadLettered + droppedStale + lostTrimmed + summaries + pending
// where pending is what the layout's scheduler still holds (LayoutScheduler.pending()).
export interface TargetCounters {
  messages: number;
  bundles: number;
  datagrams: number;
  bytes: number;
  sendErrors: number;
  /** messages this target was not sent: nothing routes them and its `unrouted` is drop */
  unrouted: number;
}

export interface LayoutCounters {
  /** stream entries taken in (a re-read of an entry the scheduler still holds is not counted again) */
  read: number;
  /** entries whose action went out to at least one target */
  sent: number;
  /** continuous-control entries superseded by a newer value before any target sent them */
  coalesced: number;
  /** entries whose action id was already handled (acked without sending) */
  duplicates: number;
  /** entries that could not be decoded, validated or encoded: copied to the dead-letter stream */
  deadLettered: number;
  /** of those, the ones whose copy Redis refused (settled anyway, logged) */
  deadLetterFailures: number;
  /** actions older than maxAgeMs, each action once (read again, it is a duplicate) */
  droppedStale: number;
  /** pending entries whose data was trimmed or deleted before they were sent */
  lostTrimmed: number;
  /** entries trimmed or deleted before this bridge read them at all (never read, so outside the sum above) */
  lostUnread: number;
  /** crowd summaries merged into a crowd value (crowd.ts) */
  summaries: number;
  /** stream ids acknowledged */
  acked: number;
  /** failed XACK calls (their ids are retried on later ticks) */
  ackFailures: number;
  /** ids given up after MAX_ACK_ATTEMPTS failed acks: they stay pending and are deduplicated when read again */
  acksAbandoned: number;
  /** failed stream reads (retried with backoff) */
  readErrors: number;
  /** failed counts of entries trimmed before they were read (tried again a second later) */
  settleErrors: number;
  /** times the consumer group (or the whole stream) was found missing and created again */
  groupsRecreated: number;
  /** send ticks that failed unexpectedly (the loop goes on) */
  tickErrors: number;
}

export const LAYOUT_COUNTERS: readonly (keyof LayoutCounters)[] = [
  'read', 'sent', 'coalesced', 'duplicates', 'deadLettered', 'deadLetterFailures', 'droppedStale', 'lostTrimmed', 'lostUnread', 'summaries',
  'acked', 'ackFailures', 'acksAbandoned', 'readErrors', 'settleErrors', 'groupsRecreated', 'tickErrors',
];

function zeroLayout(): LayoutCounters {
  return Object.fromEntries(LAYOUT_COUNTERS.map((k) => [k, 0])) as unknown as LayoutCounters;
}

export class BridgeCounters {
  readonly layouts = new Map<string, LayoutCounters>();
  readonly targets = new Map<string, TargetCounters>();
  /** newest entry read per layout: its gateway receive time (ms) */
  readonly newestRead = new Map<string, number>();
  /** sd_notify messages that systemd-notify failed to deliver */
  notifyFailures = 0;
  /** told of every tick lateness (ms), for the histogram */
  onLateness: (ms: number) => void = () => {};
  /** tick lateness samples (ms), bounded ring for percentiles */
  private readonly lateness: number[] = [];
  private latenessAt = 0;

  layout(layoutId: string): LayoutCounters {
    let c = this.layouts.get(layoutId);
    if (!c) {
      c = zeroLayout();
      this.layouts.set(layoutId, c);
    }
    return c;
  }

  /** One counter summed over every layout. */
  total(field: keyof LayoutCounters): number {
    let n = 0;
    for (const c of this.layouts.values()) n += c[field];
    return n;
  }

  target(name: string): TargetCounters {
    let t = this.targets.get(name);
    if (!t) {
      t = { messages: 0, bundles: 0, datagrams: 0, bytes: 0, sendErrors: 0, unrouted: 0 };
      this.targets.set(name, t);
    }
    return t;
  }

  recordLateness(ms: number): void {
    this.onLateness(ms);
    if (this.lateness.length < 10_000) this.lateness.push(ms);
    else this.lateness[this.latenessAt++ % 10_000] = ms;
  }

  /** Starts the lateness samples afresh (benchmarks measure one phase at a time). */
  resetLateness(): void {
    this.lateness.length = 0;
    this.latenessAt = 0;
  }

  /** Percentiles of the recent tick lateness, in ms. */
  latencyPercentiles(): { p50: number; p99: number; max: number; samples: number } {
    const s = [...this.lateness].sort((a, b) => a - b);
    const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0;
    return { p50: at(0.5), p99: at(0.99), max: s[s.length - 1] ?? 0, samples: s.length };
  }

  status(): string {
    const t = (f: keyof LayoutCounters) => this.total(f);
    return `read ${t('read')}, sent ${t('sent')}, coalesced ${t('coalesced')}, stale ${t('droppedStale')}, dead-lettered ${t('deadLettered')}, lost ${t('lostTrimmed')}, read errors ${t('readErrors')}`;
  }
}
