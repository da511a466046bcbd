// Metrics cheap enough for the request path. prom-client hashes and validates the label set on
// every inc() or observe() (measured here: 1.6 µs for `counter.labels(...).inc()`, 1.6 to 2.2 µs
// for a histogram observation), which is a tenth of a request's budget. Here the hot path finds a
// series by its label values (one Map lookup) and adds to plain numbers; prom-client sees the
// totals when scraped.
import { Counter, type Registry } from 'prom-client';

export interface CounterSeries {
  inc(by?: number): void;
}

interface Series<T> {
  readonly labels: Record<string, string>;
  readonly data: T;
}

/**
 * Series keyed by their label values, created on first use (label sets must be bounded by the
 * caller). A lookup is one join and one Map get, so callers need not keep handles of their own.
 */
class SeriesTable<T> {
  private readonly byKey = new Map<string, Series<T>>();

  constructor(
    private readonly labelNames: readonly string[],
    private readonly create: () => T,
  ) {}

  get(values: readonly string[]): T {
    const key = values.join('\u0000');
    let s = this.byKey.get(key);
    if (!s) {
      if (values.length !== this.labelNames.length) throw new Error(`expected labels ${this.labelNames.join(', ')}`);
      s = { labels: Object.fromEntries(this.labelNames.map((n, i) => [n, values[i]!])), data: this.create() };
      this.byKey.set(key, s);
    }
    return s.data;
  }

  all(): IterableIterator<Series<T>> {
    return this.byKey.values();
  }
}

/** A counter: `series(...values).inc()` is a Map lookup and a number addition. */
export class HotPathCounter {
  private readonly table: SeriesTable<{ value: number; inc: (by?: number) => void }>;

  constructor(registry: Registry, name: string, help: string, labelNames: readonly string[]) {
    this.table = new SeriesTable(labelNames, () => {
      const s = { value: 0, inc: (by = 1) => void (s.value += by) };
      return s;
    });
    const table = this.table;
    new Counter({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        this.reset();
        for (const s of table.all()) this.inc(s.labels, s.data.value);
      },
    });
  }

  series(...values: string[]): CounterSeries {
    return this.table.get(values);
  }
}

export interface HistogramSeries {
  observe(value: number): void;
}

interface HistogramData extends HistogramSeries {
  /** counts[i]: observations in (bounds[i-1], bounds[i]]; the last slot is above every bound */
  readonly counts: Float64Array;
  sum: number;
  count: number;
}

/** One line of prom-client's metric output (what `Registry` renders): `labels` first, then `sharedLabels`. */
interface MetricValue {
  labels: Record<string, string | number>;
  sharedLabels: Record<string, string>;
  value: number;
  metricName: string;
}

interface MetricOutput {
  name: string;
  help: string;
  type: string;
  values: MetricValue[];
  aggregator: string;
}

/**
 * A histogram with fixed buckets. It registers itself as a metric object that prom-client's Registry
 * renders exactly as it renders a prom-client Histogram: `getForPromString()` gives the same
 * `{name, help, type, values, aggregator}` (a test checks the text output is identical).
 */
export class HotPathHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly bounds: readonly number[];
  private readonly table: SeriesTable<HistogramData>;

  constructor(
    registry: Registry,
    readonly name: string,
    readonly help: string,
    labelNames: readonly string[],
    buckets: readonly number[],
  ) {
    this.bounds = [...buckets].sort((a, b) => a - b);
    const bounds = this.bounds;
    this.table = new SeriesTable(labelNames, () => {
      const s: HistogramData = {
        counts: new Float64Array(bounds.length + 1),
        sum: 0,
        count: 0,
        observe(value: number) {
          let i = 0;
          while (i < bounds.length && value > bounds[i]!) i++;
          s.counts[i]!++;
          s.sum += value;
          s.count++;
        },
      };
      return s;
    });
    registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  series(...values: string[]): HistogramSeries {
    return this.table.get(values);
  }

  /** What Registry.metrics() renders: bucket lines carry `le`, every line the series' labels. */
  getForPromString(): Promise<MetricOutput> {
    const values: MetricValue[] = [];
    const bucket = `${this.name}_bucket`;
    for (const { labels, data } of this.table.all()) {
      let cumulative = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        cumulative += data.counts[i]!;
        values.push({ labels: { le: this.bounds[i]! }, sharedLabels: labels, value: cumulative, metricName: bucket });
      }
      values.push({ labels: { le: '+Inf' }, sharedLabels: labels, value: data.count, metricName: bucket });
      values.push({ labels: {}, sharedLabels: labels, value: data.sum, metricName: `${this.name}_sum` });
      values.push({ labels: {}, sharedLabels: labels, value: data.count, metricName: `${this.name}_count` });
    }
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator });
  }

  /** Registry.getMetricsAsJSON() calls this: the same values with the labels merged. */
  async get(): Promise<MetricOutput> {
    const out = await this.getForPromString();
    return { ...out, values: out.values.map(({ sharedLabels, labels, ...rest }) => ({ ...rest, labels: { ...sharedLabels, ...labels } })) as MetricValue[] };
  }

  /** Registry.resetMetrics() calls this. */
  reset(): void {
    for (const { data } of this.table.all()) {
      data.counts.fill(0);
      data.sum = 0;
      data.count = 0;
    }
  }
}
