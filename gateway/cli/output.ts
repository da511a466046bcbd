// How audiencectl speaks: one JSON object on stdout with --json, readable lines otherwise; errors
// on stderr (and as {"error": {...}} with --json) with a non-zero exit.
import { AppError } from '../errors.js';

export class CliOutput {
  constructor(private readonly json: boolean) {}

  /** Prints the command's result: `object` with --json, `human` lines otherwise. */
  result(object: unknown, human: string): void {
    process.stdout.write(this.json ? `${JSON.stringify(object)}\n` : `${human}\n`);
  }

  /** Reports a failure and returns the exit code. */
  failure(e: unknown): number {
    const code = e instanceof AppError ? e.code : 'error';
    const message = e instanceof Error ? e.message : String(e);
    if (this.json) process.stdout.write(`${JSON.stringify({ error: { code, message } })}\n`);
    process.stderr.write(`audiencectl: ${message}${e instanceof AppError ? ` (${code})` : ''}\n`);
    return 1;
  }
}

/** A table of rows for humans. */
export function table(rows: string[][]): string {
  if (rows.length === 0) return '(none)';
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n');
}

export function isoOrDash(ms: number | null): string {
  return ms === null ? '-' : new Date(ms).toISOString();
}
