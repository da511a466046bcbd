// What a run measures: one HdrHistogram per metric (values recorded in microseconds, 3 significant
// digits), kept whole and per label set ("ack_ms{transport=socket,type=Slider}"), and counts. A
// result carries every histogram encoded (HdrHistogram's compressed base64), so the results of
// several generator machines merge into the same figures one machine would have measured.
import * as hdr from 'hdr-histogram-js';
import type { Stat } from './thresholds.js';

type Histogram = hdr.Histogram;

const newHistogram = (): Histogram => hdr.build({ numberOfSignificantValueDigits: 3, useWebAssembly: false });

/** A metric's figures in a result, in milliseconds, with its encoded histogram (µs). */
export interface MetricSummary {
  count: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
  hdr: string;
}

const ms = (us: number) => Math.round(us) / 1000;

export function summarize(h: Histogram): MetricSummary {
  return {
    count: h.totalCount,
    mean: ms(h.totalCount > 0 ? h.mean : 0),
    p50: ms(h.getValueAtPercentile(50)),
    p90: ms(h.getValueAtPercentile(90)),
    p99: ms(h.getValueAtPercentile(99)),
    p999: ms(h.getValueAtPercentile(99.9)),
    max: ms(h.maxValue),
    hdr: hdr.encodeIntoCompressedBase64(h),
  };
}

/** The counts every result has (the contract: phones, actions, acks, errors), and more. */
export const COUNT_NAMES = ['phones', 'actions', 'acks', 'errors', 'socket_actions', 'http_actions', 'tokens_minted', 'sockets_opened', 'socket_failures', 'reconnects', 'page_frames', 'crowd_frames', 'late_starts', 'unsent', 'display_seen', 'display_lost', 'crowd_checked', 'crowd_mismatch', 'crowd_samples', 'crowd_samples_off', 'dead_links', 'resends', 'renewals', 'restates'] as const;
export type CountName = (typeof COUNT_NAMES)[number];

export class Metrics {
  private readonly histograms = new Map<string, Histogram>();
  readonly counts = Object.fromEntries(COUNT_NAMES.map((n) => [n, 0])) as Record<CountName, number>;
  /** errors by code: the API's codes, `close_<code>` for sockets closed by the server, `http_<status>` */
  readonly errorsByCode = new Map<string, number>();

  /** Records one value in milliseconds under `name` and, with labels, under `name{labels}` too. */
  record(name: string, valueMs: number, labels?: string): void {
    const us = Math.max(0, Math.round(valueMs * 1000));
    this.histogram(name).recordValue(us);
    if (labels) this.histogram(`${name}{${labels}}`).recordValue(us);
  }

  count(name: CountName, by = 1): void {
    this.counts[name] += by;
  }

  error(code: string): void {
    this.counts.errors++;
    this.errorsByCode.set(code, (this.errorsByCode.get(code) ?? 0) + 1);
  }

  private histogram(name: string): Histogram {
    let h = this.histograms.get(name);
    if (!h) this.histograms.set(name, (h = newHistogram()));
    return h;
  }

  /** A statistic of a histogram, in ms; undefined for one with no values (and for `rate`, which counts have). */
  stat(name: string, stat: Stat): number | undefined {
    const h = this.histograms.get(name);
    if (!h || h.totalCount === 0 || stat === 'rate') return undefined;
    if (stat === 'count') return h.totalCount;
    if (stat === 'mean') return ms(h.mean);
    if (stat === 'max') return ms(h.maxValue);
    if (stat === 'min') return ms(h.minNonZeroValue);
    return ms(h.getValueAtPercentile(Number(/\d+(\.\d+)?/.exec(stat)![0])));
  }

  /** Every histogram, summarized; the names without labels first. */
  summaries(): Record<string, MetricSummary> {
    const names = [...this.histograms.keys()].sort((a, b) => Number(a.includes('{')) - Number(b.includes('{')) || a.localeCompare(b));
    return Object.fromEntries(names.map((n) => [n, summarize(this.histograms.get(n)!)]));
  }

  /** Adds a result's figures (its encoded histograms, counts and errors) to these. */
  absorb(metrics: Readonly<Record<string, MetricSummary>>, counts: Readonly<Partial<Record<string, number>>>, errors: Readonly<Record<string, number>>): void {
    for (const [name, m] of Object.entries(metrics)) this.histogram(name).add(hdr.decodeFromCompressedBase64(m.hdr));
    for (const name of COUNT_NAMES) this.counts[name] += counts[name] ?? 0;
    for (const [code, n] of Object.entries(errors)) this.errorsByCode.set(code, (this.errorsByCode.get(code) ?? 0) + n);
  }
}
