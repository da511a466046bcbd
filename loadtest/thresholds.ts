// Thresholds as k6 writes them: metric name -> "p(99) < 150", "max <= 2000", "mean < 20",
// "rate < 0.001", "count > 100". Pure: parsed once (an unknown metric or a malformed expression is a
// configuration error, named), then judged against a run's figures.
import { LoadtestError } from './errors.js';

/** A histogram metric's statistics, or a counting metric's, in the units the report prints (ms, share). */
export type Stat = 'mean' | 'max' | 'min' | 'count' | 'rate' | `p(${number})`;

export interface Threshold {
  metric: string;
  expression: string;
  stat: Stat;
  op: '<' | '<=' | '>' | '>=' | '==';
  bound: number;
}

/** The metrics a threshold may name, and the statistics each has. */
export const THRESHOLD_METRICS: Readonly<Record<string, 'histogram' | 'rate'>> = {
  ack_ms: 'histogram',
  ack_service_ms: 'histogram',
  page_switch_ms: 'histogram',
  crowd_interval_ms: 'histogram',
  connect_ms: 'histogram',
  outage_ms: 'histogram',
  schedule_lag_ms: 'histogram',
  display_ms: 'histogram',
  errors: 'rate',
  display_lost: 'rate',
  crowd_mismatch: 'rate',
  crowd_samples_off: 'rate',
  socket_failures: 'rate',
};

const EXPRESSION = /^\s*(p\(\s*(\d+(?:\.\d+)?)\s*\)|mean|max|min|count|rate)\s*(<=|>=|==|<|>)\s*(-?\d+(?:\.\d+)?(?:e-?\d+)?)\s*$/;

export function parseThresholds(spec: Readonly<Record<string, string>>): Threshold[] {
  return Object.entries(spec).map(([metric, expression]) => {
    const kind = THRESHOLD_METRICS[metric];
    if (!kind) throw new LoadtestError('config', `thresholds: unknown metric "${metric}" (known: ${Object.keys(THRESHOLD_METRICS).join(', ')})`);
    const m = EXPRESSION.exec(expression);
    if (!m) throw new LoadtestError('config', `thresholds.${metric}: "${expression}" is not of the form "p(99) < 150", "max <= 2000" or "rate < 0.01"`);
    const stat = (m[2] !== undefined ? `p(${Number(m[2])})` : m[1]) as Stat;
    if (m[2] !== undefined && !(Number(m[2]) > 0 && Number(m[2]) <= 100)) throw new LoadtestError('config', `thresholds.${metric}: a percentile is between 0 and 100`);
    if (kind === 'rate' && stat !== 'rate' && stat !== 'count') throw new LoadtestError('config', `thresholds.${metric}: "${metric}" has "rate" and "count" only`);
    if (kind === 'histogram' && stat === 'rate') throw new LoadtestError('config', `thresholds.${metric}: "${metric}" is a histogram (p(N), mean, max, min, count)`);
    return { metric, expression, stat, op: m[3] as Threshold['op'], bound: Number(m[4]) };
  });
}

/** What a threshold is judged on: a statistic of a metric, or undefined when the run has no value for it. */
export type StatOf = (metric: string, stat: Stat) => number | undefined;

export interface Judged extends Threshold {
  value: number | null;
  ok: boolean;
}

/** Judges every threshold; a histogram with no values passes only bounds it would meet with none. */
export function judge(thresholds: readonly Threshold[], statOf: StatOf): Judged[] {
  return thresholds.map((t) => {
    const value = statOf(t.metric, t.stat);
    if (value === undefined) return { ...t, value: null, ok: t.stat === 'count' ? compare(0, t.op, t.bound) : true };
    return { ...t, value, ok: compare(value, t.op, t.bound) };
  });
}

function compare(a: number, op: Threshold['op'], b: number): boolean {
  switch (op) {
    case '<':
      return a < b;
    case '<=':
      return a <= b;
    case '>':
      return a > b;
    case '>=':
      return a >= b;
    case '==':
      return a === b;
  }
}
