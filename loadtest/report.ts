// The summary a person reads at the end of a run or a merge: the verdict, the thresholds, every
// metric's percentiles (latency in ms), the counts and the errors by code.
import type { LoadtestResult } from './result.js';

const pad = (rows: string[][]): string => {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows.map((r) => r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  ')).join('\n');
};

export function summaryText(r: LoadtestResult): string {
  const lines: string[] = [];
  const verdict = r.verdict === 'invalid' ? `INVALID: the generator started planned work late (schedule lag p99 ${r.generator.lagP99Ms} ms > ${r.generator.lagLimitMs} ms); the figures say nothing about the target` : r.verdict.toUpperCase();
  lines.push(`audience-loadtest: ${verdict}${r.interrupted ? ' (interrupted: a partial run)' : ''}`);
  lines.push(`target ${r.target}, layout ${r.scenario.layoutId}, seed ${r.scenario.seed}, ${r.durationS.toFixed(1)} s${r.parts > 1 ? `, ${r.parts} runs merged` : ''}`, '');
  if (r.thresholds.length > 0) {
    lines.push(pad([['threshold', 'measured', ''], ...r.thresholds.map((t) => [`${t.metric}: ${t.expression}`, t.value === null ? '-' : String(+t.value.toFixed(6)), t.ok ? 'ok' : 'FAILED'])]), '');
  }
  const metrics = Object.entries(r.metrics);
  if (metrics.length > 0) {
    lines.push(pad([['metric (ms)', 'count', 'mean', 'p50', 'p90', 'p99', 'p99.9', 'max'], ...metrics.map(([name, m]) => [name, String(m.count), ...[m.mean, m.p50, m.p90, m.p99, m.p999, m.max].map((x) => x.toFixed(1))])]), '');
  }
  if (r.crowd?.length > 0) {
    const figure = (x: { value: number[]; n: number | null } | null) => (x === null ? 'nothing arrived' : `${x.value.map((v) => +v.toFixed(4)).join(' ')} (n ${x.n ?? '-'})`);
    lines.push(pad([['crowd check', 'mode', 'expected', 'displayed', ''], ...r.crowd.map((c) => [`${c.address} (lid ${c.lid})`, c.mode, figure(c.expected), figure(c.shown), c.match ? 'ok' : 'MISMATCH'])]), '');
  }
  lines.push(Object.entries(r.counts).map(([k, v]) => `${k} ${v}`).join(', '));
  const errors = Object.entries(r.errors);
  if (errors.length > 0) lines.push(`errors by code: ${errors.map(([k, v]) => `${k} ${v}`).join(', ')}`);
  return `${lines.join('\n')}\n`;
}
