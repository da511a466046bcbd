// This host's clock against Redis's: the gateway stamps what it stores in Redis time, and the bridge
// reads those stamps in Redis time, so an action's age and its play-out moment do not depend on the
// two hosts' clocks agreeing. The offset comes from Redis's TIME, asked a few times a round: the
// sample with the smallest round trip over the last rounds wins (its error is at most half that
// round trip), so a command that queued behind others does not skew it.
import { Cluster } from 'ioredis';
import { Gauge, type Registry } from 'prom-client';
import type { Logger } from './log.js';
import type { RedisClient } from './redis.js';

/** TIME asked this many times a round. */
const SAMPLES_PER_ROUND = 4;
/** The best sample of this many recent rounds is used (so a stepped host clock is followed within them). */
const ROUNDS_KEPT = 4;
/** How often a round is taken. */
export const CLOCK_ROUND_MS = 5000;

interface Sample {
  /** Redis time minus this host's time at the sample's middle, ms */
  offsetMs: number;
  rttMs: number;
}

/**
 * Redis's TIME in ms. On a cluster, from the master that holds hash slot 0, so every process of a
 * deployment reads the same server's clock.
 */
export async function redisTimeMs(redis: RedisClient): Promise<number> {
  const node = redis instanceof Cluster ? slotZeroNode(redis) : redis;
  const [seconds, micros] = await node.time();
  return Number(seconds) * 1000 + Number(micros) / 1000;
}

function slotZeroNode(cluster: Cluster): RedisClient {
  const key = cluster.slots[0]?.[0];
  return cluster.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === key) ?? cluster.nodes('master')[0] ?? cluster;
}

export interface ClockReading {
  /** Redis's clock minus this host's, ms (positive: this host is behind) */
  offsetMs: number;
  /** the offset is right within this many ms (half the best sample's round trip) */
  accuracyMs: number;
  /** a round has succeeded */
  synced: boolean;
}

export class RedisClock {
  private rounds: Sample[][] = [];
  private best: Sample | null = null;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly onError: (e: unknown) => void = () => {},
    private readonly localNow: () => number = Date.now,
  ) {}

  /** Now in Redis's clock, whole ms as Date.now() (this host's until the first round succeeds). */
  readonly now = (): number => Math.round(this.localNow() + (this.best?.offsetMs ?? 0));

  /** Now in Redis's clock, to a fraction of a ms (as fine as this host's clock is). */
  readonly preciseNow = (): number => this.localNow() + (this.best?.offsetMs ?? 0);

  /** A time in Redis's clock, in this host's clock (for what this host's neighbours play: OSC timetags). */
  toLocal(redisMs: number): number {
    return redisMs - (this.best?.offsetMs ?? 0);
  }

  reading(): ClockReading {
    return { offsetMs: this.best?.offsetMs ?? 0, accuracyMs: this.best ? this.best.rttMs / 2 : Infinity, synced: this.best !== null };
  }

  /** One round of samples now; rejects if none succeeded (the offset stays what it was). */
  async sync(): Promise<ClockReading> {
    const round: Sample[] = [];
    let failure: unknown = null;
    for (let i = 0; i < SAMPLES_PER_ROUND; i++) {
      try {
        round.push(await this.sample());
      } catch (e) {
        failure = e;
      }
    }
    if (round.length === 0) throw failure;
    this.rounds = [...this.rounds.slice(-(ROUNDS_KEPT - 1)), round];
    this.best = this.rounds.flat().reduce((a, b) => (b.rttMs < a.rttMs ? b : a));
    return this.reading();
  }

  /** Takes a round every CLOCK_ROUND_MS; a failed one is reported and the last offset kept. */
  start(): void {
    this.timer ??= setInterval(() => void this.sync().catch(this.onError), CLOCK_ROUND_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private async sample(): Promise<Sample> {
    const localAt = this.localNow();
    const sent = performance.now();
    const redisMs = await redisTimeMs(this.redis);
    const rttMs = performance.now() - sent;
    return { offsetMs: redisMs - (localAt + rttMs / 2), rttMs };
  }
}

/** The offset in words when it is beyond `boundMs` (0: no bound), else null. */
export function clockOffsetProblem(r: ClockReading, boundMs: number): string | null {
  if (!r.synced || boundMs <= 0 || Math.abs(r.offsetMs) <= boundMs) return null;
  const ms = Math.round(r.offsetMs);
  return `this host's clock is ${Math.abs(ms)} ms ${ms > 0 ? 'behind' : 'ahead of'} Redis's (bound ${boundMs} ms; corrected to within ${r.accuracyMs.toFixed(1)} ms, but set the host's clock: NTP)`;
}

/**
 * `<prefix>clock_offset_seconds` (Redis's clock minus this host's) and `<prefix>clock_accuracy_seconds`
 * (half the best sample's round trip), averaged over a gateway's workers.
 */
export function registerClockMetrics(registry: Registry, prefix: string, reading: () => ClockReading): void {
  new Gauge({
    name: `${prefix}clock_offset_seconds`,
    help: "Redis's clock (TIME) minus this host's, from the round trip of least delay: positive when this host is behind. Stamps and ages are corrected by it.",
    registers: [registry],
    aggregator: 'average',
    collect() {
      this.set(reading().offsetMs / 1000);
    },
  });
  new Gauge({
    name: `${prefix}clock_accuracy_seconds`,
    help: 'The clock offset is right within this (half the round trip of its sample); +Inf before the first sample.',
    registers: [registry],
    aggregator: 'max',
    collect() {
      this.set(reading().accuracyMs / 1000);
    },
  });
}

/**
 * Logs when the offset goes beyond its bound (with the figure), again at most once a minute while it
 * stays there, and when it is back within. Returns the timer.
 */
export function watchClockOffset(problem: () => string | null, log: Logger): NodeJS.Timeout {
  let saidAt = 0;
  let beyond = false;
  const check = () => {
    const p = problem();
    if (p !== null && (!beyond || Date.now() - saidAt >= 60_000)) {
      log.warn({ clock: p }, "this host's clock is far from Redis's");
      saidAt = Date.now();
    } else if (p === null && beyond) log.info("this host's clock is back within its bound of Redis's");
    beyond = p !== null;
  };
  check();
  const timer = setInterval(check, CLOCK_ROUND_MS);
  timer.unref();
  return timer;
}
