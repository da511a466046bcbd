// A run's result as --out writes it and merge reads it: the verdict, every metric with its encoded
// HdrHistogram, the counts, errors by code, the judged thresholds and the generator's own health.
// Merging results adds their histograms and counts, so several generator machines give one report
// and one verdict.
import { readFileSync } from 'node:fs';
import { LoadtestError } from './errors.js';
import type { CrowdCheckRow, CrowdSample } from './crowd-check.js';
import { Metrics, type CountName, type MetricSummary } from './metrics.js';
import type { Scenario } from './scenario.js';
import { judge, parseThresholds, type Judged } from './thresholds.js';

export type Verdict = 'pass' | 'fail' | 'invalid';

export interface LoadtestResult {
  tool: 'audience-loadtest';
  format: 1;
  verdict: Verdict;
  /** stopped early by Ctrl-C */
  interrupted: boolean;
  target: string;
  startedAt: string;
  durationS: number;
  /** how many runs this result merges (1 for a run) */
  parts: number;
  scenario: Scenario;
  metrics: Record<string, MetricSummary>;
  counts: Record<CountName, number>;
  errors: Record<string, number>;
  thresholds: Judged[];
  /** with --display: each aggregated control's expected crowd value and n beside what the display showed */
  crowd: CrowdCheckRow[];
  /** with --display: each aggregated control's n as shown every 250 ms, beside the range the stored actions gave over the second before */
  crowdSamples: CrowdSample[];
  /** when each socket lost without a close of its own (a dead link, a lost host) was live again: its new page, ms since the epoch, in order; beside a fault's moment, how long the phones were dark */
  socketsBackAt: number[];
  generator: { lagLimitMs: number; lagP99Ms: number | null; lateStarts: number; valid: boolean };
}

/** The verdict and judged thresholds of a run's (or a merge's) figures. */
export function buildResult(m: Metrics, base: Pick<LoadtestResult, 'target' | 'startedAt' | 'durationS' | 'parts' | 'scenario' | 'interrupted' | 'crowd' | 'crowdSamples' | 'socketsBackAt'>, partsValid = true): LoadtestResult {
  const thresholds = judge(parseThresholds(base.scenario.thresholds), (metric, stat) => {
    if (metric === 'errors') return stat === 'count' ? m.counts.errors : m.counts.errors / Math.max(1, m.counts.actions);
    if (metric === 'display_lost') return stat === 'count' ? m.counts.display_lost : m.counts.display_lost / Math.max(1, m.counts.display_seen + m.counts.display_lost);
    if (metric === 'crowd_mismatch') return stat === 'count' ? m.counts.crowd_mismatch : m.counts.crowd_mismatch / Math.max(1, m.counts.crowd_checked);
    if (metric === 'crowd_samples_off') return stat === 'count' ? m.counts.crowd_samples_off : m.counts.crowd_samples_off / Math.max(1, m.counts.crowd_samples);
    if (metric === 'socket_failures') return stat === 'count' ? m.counts.socket_failures : m.counts.socket_failures / Math.max(1, m.counts.sockets_opened + m.counts.socket_failures);
    return m.stat(metric, stat);
  });
  const lagP99Ms = m.stat('schedule_lag_ms', 'p(99)') ?? null;
  const valid = partsValid && (lagP99Ms === null || lagP99Ms <= base.scenario.maxLagMs);
  return {
    tool: 'audience-loadtest',
    format: 1,
    verdict: !valid ? 'invalid' : thresholds.every((t) => t.ok) ? 'pass' : 'fail',
    ...base,
    metrics: m.summaries(),
    counts: { ...m.counts },
    errors: Object.fromEntries([...m.errorsByCode].sort((a, b) => b[1] - a[1])),
    thresholds,
    generator: { lagLimitMs: base.scenario.maxLagMs, lagP99Ms, lateStarts: m.counts.late_starts, valid },
  };
}

/** Several results (one per generator machine or process) as one: histograms and counts added. */
export function mergeResults(files: readonly string[]): LoadtestResult {
  const parts = files.map(readResult);
  const m = new Metrics();
  for (const p of parts) m.absorb(p.metrics, p.counts, p.errors);
  const first = parts[0]!;
  return buildResult(
    m,
    {
      target: [...new Set(parts.map((p) => p.target))].join(', '),
      startedAt: parts.map((p) => p.startedAt).sort()[0]!,
      durationS: Math.max(...parts.map((p) => p.durationS)),
      parts: parts.reduce((n, p) => n + p.parts, 0),
      scenario: first.scenario,
      interrupted: parts.some((p) => p.interrupted),
      crowd: parts.flatMap((p) => p.crowd ?? []),
      crowdSamples: parts.flatMap((p) => p.crowdSamples ?? []),
      socketsBackAt: parts.flatMap((p) => p.socketsBackAt ?? []).sort((a, b) => a - b),
    },
    parts.every((p) => p.generator.valid),
  );
}

function readResult(file: string): LoadtestResult {
  let r: LoadtestResult;
  try {
    r = JSON.parse(readFileSync(file, 'utf8')) as LoadtestResult;
  } catch (e) {
    throw new LoadtestError('config', `${file}: not a result of audience-loadtest run --out (${e instanceof Error ? e.message : String(e)})`);
  }
  if (r?.tool !== 'audience-loadtest' || r.format !== 1) throw new LoadtestError('config', `${file}: not a result of audience-loadtest run --out`);
  return r;
}
