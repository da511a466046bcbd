// What one bench run records as its scenarios play: the rows of the figures table and every figure
// as measured (raw), written to bench/results/<time>.json at the end of a whole run.
import type { BenchRow } from './figures-table.js';

export class RunRecord {
  readonly rows: BenchRow[] = [];
  readonly raw: Record<string, unknown> = {};
  /** a row of the figures table: `met` null for a figure reported without a target */
  readonly row = (scenario: string, figure: string, target: string, met: boolean | null): void => {
    this.rows.push({ scenario, figure, target, met });
  };
}

export const progress = (what: string): void => void process.stderr.write(`bench: ${what}\n`);
