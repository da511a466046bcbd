// How audiencectl speaks: one JSON object on stdout with --json, readable lines otherwise; errors
// on stderr (and as {"error": {...}} with --json) with a non-zero exit.
import { hostname, userInfo } from 'node:os';
import { AppError, isRedisOutage } from '../errors.js';
import { KekError } from '../store/signing-kek.js';

export class CliOutput {
  constructor(private readonly json: boolean) {}

  /** Prints the command's result: `object` with --json, `human` lines otherwise. */
  result(object: unknown, human: string): void {
    process.stdout.write(this.json ? `${JSON.stringify(object)}\n` : `${human}\n`);
  }

  /**
   * Reports a failure and returns the exit code: 2 for a usage error (invalid_argument), 1 for a
   * refused operation. Every code is one of the documented table's: Redis away is `unavailable`,
   * anything unexpected `internal`.
   */
  failure(e: unknown): number {
    if (e instanceof KekError) e = new AppError('invalid_argument', e.message); // a key-encryption key missing or not the one: the caller's settings
    const code = e instanceof AppError ? e.code : /^cannot reach Redis/.test((e as Error)?.message ?? '') || isRedisOutage(e) ? 'unavailable' : 'internal';
    const message = e instanceof Error ? e.message : String(e);
    if (this.json) process.stdout.write(`${JSON.stringify({ error: { code, message } })}\n`);
    process.stderr.write(`audiencectl: ${message}${e instanceof AppError ? ` (${code})` : ''}\n`);
    return code === 'invalid_argument' ? 2 : 1;
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

/** Who made a change, as the show record and the moderation decisions say it: `cli:<--by>`, or `cli:<user>@<host>`. */
export function operator(by: string | undefined): string {
  if (by !== undefined) {
    if (!/^[^\s]{1,100}$/.test(by)) throw new AppError('invalid_argument', '--by must be 1 to 100 characters without spaces');
    return `cli:${by}`;
  }
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // no passwd entry (a container's arbitrary uid): the host still says where it came from
  }
  return `cli:${user}@${hostname()}`;
}
