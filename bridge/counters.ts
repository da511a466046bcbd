// The bridge's live counters: STATUS= for systemd, the log, and (later) Prometheus.
export interface TargetCounters {
  messages: number;
  bundles: number;
  datagrams: number;
  bytes: number;
  sendErrors: number;
}

export class BridgeCounters {
  read = 0;
  sent = 0;
  coalesced = 0;
  droppedStale = 0;
  duplicates = 0;
  deadLettered = 0;
  acked = 0;
  readErrors = 0;
  readonly targets = new Map<string, TargetCounters>();
  /** newest entry read per layout: its gateway receive time (ms) */
  readonly newestRead = new Map<string, number>();
  /** told of every tick lateness (ms), for the histogram */
  onLateness: (ms: number) => void = () => {};
  /** tick lateness samples (ms), bounded ring for percentiles */
  private readonly lateness: number[] = [];
  private latenessAt = 0;

  target(name: string): TargetCounters {
    let t = this.targets.get(name);
    if (!t) {
      t = { messages: 0, bundles: 0, datagrams: 0, bytes: 0, sendErrors: 0 };
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
    return `read ${this.read}, sent ${this.sent}, coalesced ${this.coalesced}, stale ${this.droppedStale}, dead-lettered ${this.deadLettered}, read errors ${this.readErrors}`;
  }
}
