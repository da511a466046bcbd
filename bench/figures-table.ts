// The table of current figures against the targets in bench/README.md: made from one
// `npm run bench` result (bench/results/<time>.json), never written by hand. `npm run bench` rewrites
// it after each run; `npm run bench:table` rewrites it from the newest result already there.
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

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

/** Replaces the table in a Markdown file (between its markers) with this result's. */
export function writeFiguresTable(readme: string, result: BenchResult, file: string): void {
  const text = readFileSync(readme, 'utf8');
  const start = text.indexOf(TABLE_START);
  const end = text.indexOf(TABLE_END);
  if (start < 0 || end < start) throw new Error(`${readme} has no figures table markers`);
  writeFileSync(readme, `${text.slice(0, start)}${figuresTable(result, file)}${text.slice(end + TABLE_END.length)}`);
}

/** The newest suite result in a results folder (files named by their start time), or null. */
export function newestResult(dir: string): string | null {
  const suite = readdirSync(dir).filter((f) => /^\d{4}-\d{2}-\d{2}T[\d-]+Z\.json$/.test(f)).sort();
  return suite.length === 0 ? null : join(dir, suite[suite.length - 1]!);
}

// npm run bench:table: the README's table from the newest result already there
if (process.argv[1]?.endsWith('figures-table.js')) {
  const file = newestResult('bench/results');
  if (!file) throw new Error('no bench/results/<time>.json yet: run npm run bench');
  writeFiguresTable('bench/README.md', JSON.parse(readFileSync(file, 'utf8')) as BenchResult, file);
  process.stdout.write(`bench/README.md: figures from ${file}\n`);
}
