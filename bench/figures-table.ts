// The table of current figures against the targets in bench/README.md, and the sizing table in
// docs/operations.md (bench/sizing.ts): made from one `npm run bench` result
// (bench/results/<time>.json), never written by hand. `npm run bench` rewrites both after each run;
// `npm run bench:table` rewrites them from the newest result already there.
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SIZING_END, SIZING_START, sizingTable, unitFigures, type UnitFigures } from './sizing.js';

export interface BenchRow {
  scenario: string;
  figure: string;
  target: string;
  met: boolean | null;
}

export interface BenchResult {
  startedAt: string;
  /** the commit measured (with "+changes" when the work tree differed from it) */
  commit?: string;
  /** cores, CPU model, Node, Redis, host steal */
  machine?: string;
  rows: BenchRow[];
  /** every figure as measured; `units` holds the sizing table's inputs */
  raw?: Record<string, unknown>;
}

export const TABLE_START = '<!-- figures: made by npm run bench from bench/results; do not edit -->';
export const TABLE_END = '<!-- end of figures -->';

/** The figures against their targets: rows with a target first, then what is reported for reference. */
export function figuresTable(result: BenchResult, file: string): string {
  const targeted = result.rows.filter((r) => r.met !== null);
  const reported = result.rows.filter((r) => r.met === null && r.target !== 'note');
  const line = (r: BenchRow) => `| ${r.scenario} | ${r.figure} | ${r.target} | ${r.met === null ? '' : r.met ? 'yes' : '**no**'} |`;
  return [
    TABLE_START,
    `Measured ${result.startedAt.slice(0, 16).replace('T', ' ')} UTC${result.commit ? ` at commit ${result.commit}` : ''}${result.machine ? ` on ${result.machine}` : ''}; the whole result: \`${file}\`.`,
    '',
    `Targets met: ${targeted.filter((r) => r.met).length} of ${targeted.length}.`,
    '',
    '| scenario | measured | target | met |',
    '|---|---|---|---|',
    ...targeted.map(line),
    ...reported.map(line),
    TABLE_END,
  ].join('\n');
}

/** Replaces the text between two markers of a Markdown file (the markers included). */
function replaceBetween(file: string, start: string, end: string, text: string): void {
  const old = readFileSync(file, 'utf8');
  const from = old.indexOf(start);
  const to = old.indexOf(end);
  if (from < 0 || to < from) throw new Error(`${file} has no ${start} ... ${end} markers`);
  writeFileSync(file, `${old.slice(0, from)}${text}${old.slice(to + end.length)}`);
}

/** Replaces the table in a Markdown file (between its markers) with this result's. */
export function writeFiguresTable(readme: string, result: BenchResult, file: string): void {
  replaceBetween(readme, TABLE_START, TABLE_END, figuresTable(result, file));
}

/** Replaces the sizing table in a Markdown file (between its markers) with one from these figures. */
export function writeSizingTable(doc: string, units: UnitFigures, source: { file: string; commit?: string; startedAt: string }): void {
  replaceBetween(doc, SIZING_START, SIZING_END, sizingTable(units, source));
}

/** The newest suite result in a results folder (files named by their start time), or null. */
export function newestResult(dir: string): string | null {
  const suite = readdirSync(dir).filter((f) => /^\d{4}-\d{2}-\d{2}T[\d-]+Z\.json$/.test(f)).sort();
  return suite.length === 0 ? null : join(dir, suite[suite.length - 1]!);
}

// npm run bench:table: the README's table and the sizing table in docs/operations.md from the
// newest result already there
if (process.argv[1]?.endsWith('figures-table.js')) {
  const file = newestResult('bench/results');
  if (!file) throw new Error('no bench/results/<time>.json yet: run npm run bench');
  const result = JSON.parse(readFileSync(file, 'utf8')) as BenchResult;
  writeFiguresTable('bench/README.md', result, file);
  writeSizingTable('docs/operations.md', unitFigures(result.raw ?? {}), { file, ...result });
  process.stdout.write(`bench/README.md and docs/operations.md's sizing: figures from ${file}\n`);
}
