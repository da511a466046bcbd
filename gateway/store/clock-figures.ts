// The phones' sync across the deployment, for the team page: every gateway process writes, every
// FIGURES_EVERY_MS, how many of each layout's sockets it holds per zone in each uncertainty bucket
// (live/clock-reports.ts) to the layout's hash, one field per process, with the time it wrote it.
// Reading adds up the fields written within FRESH_MS: a process that stopped or was lost drops out
// within that, and the hash itself expires once no process writes it.
import type { RedisClient } from '../../runtime/redis.js';
import type { RedisKeys } from './keys.js';

export const FIGURES_EVERY_MS = 5000;
/** Upper bounds of the uncertainty buckets, ms; one more bucket holds everything above. */
export const CLOCK_BUCKETS_MS: readonly number[] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];
const FRESH_MS = 3 * FIGURES_EVERY_MS;

export interface ZoneSync {
  zone: string;
  /** phones that reported */
  phones: number;
  /** half of them, and 95 %, are synced within this many ms (a bucket's bound; null: past the last) */
  p50Ms: number | null;
  p95Ms: number | null;
  /** phones per bucket: up to each of bucketsMs, then past the last */
  counts: number[];
}

export class ClockFiguresStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
  ) {}

  /** This process's figures, by layout (one transaction per layout: one hash slot each). */
  async publish(process: string, byLayout: ReadonlyMap<string, Record<string, number[]>>, now: number): Promise<void> {
    await Promise.all(
      [...byLayout].map(([layoutId, zones]) => {
        const key = this.keys.clockFigures(layoutId);
        return this.redis.multi().hset(key, process, JSON.stringify({ at: now, zones })).pexpire(key, FRESH_MS).exec();
      }),
    );
  }

  /** The deployment's figures for a layout, per zone, from the processes that wrote lately. */
  async read(layoutId: string, now: number): Promise<{ bucketsMs: readonly number[]; zones: ZoneSync[] }> {
    const fields = await this.redis.hgetall(this.keys.clockFigures(layoutId));
    const sums = new Map<string, number[]>();
    for (const text of Object.values(fields)) {
      let figures: { at?: unknown; zones?: Record<string, unknown> };
      try {
        figures = JSON.parse(text) as typeof figures;
      } catch {
        continue;
      }
      if (typeof figures.at !== 'number' || now - figures.at > FRESH_MS) continue;
      for (const [zone, counts] of Object.entries(figures.zones ?? {})) {
        if (!Array.isArray(counts)) continue;
        const sum = sums.get(zone) ?? new Array<number>(CLOCK_BUCKETS_MS.length + 1).fill(0);
        counts.forEach((n, i) => i < sum.length && typeof n === 'number' && (sum[i]! += n));
        sums.set(zone, sum);
      }
    }
    const zones = [...sums].sort(([a], [b]) => a.localeCompare(b)).map(([zone, counts]) => ({ zone, phones: counts.reduce((a, b) => a + b, 0), p50Ms: withinMs(counts, 0.5), p95Ms: withinMs(counts, 0.95), counts }));
    return { bucketsMs: CLOCK_BUCKETS_MS, zones };
  }
}

/** The share `q` (0 to 1) of a zone's phones is within this many ms (a bucket's upper bound; null past the last, or none). */
export function withinMs(counts: readonly number[], q: number): number | null {
  const total = counts.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  let seen = 0;
  for (let i = 0; i < counts.length; i++) {
    seen += counts[i]!;
    if (seen >= q * total) return CLOCK_BUCKETS_MS[i] ?? null;
  }
  return null;
}
