// The gateway's clock as a phone estimates it, NTP-style, from `time` exchanges on its live socket:
// each exchange gives the server's receive and send times (t1, t2) beside the phone's send and
// receive times (t0, t3), so offset = ((t1 - t0) + (t2 - t3)) / 2, right within half the round trip
// (t3 - t0) - (t2 - t1). Of the exchanges of the last SAMPLE_LIFE_MS, the one of least round trip is
// used: a frame that queued behind others (a crowd frame, a busy radio) says little, the quickest
// says most. Every gateway process of a deployment answers in one timebase (Redis's clock), so the
// exchanges of a socket that moved to another process still count. No dependencies.

/** An exchange older than this no longer counts (the phone's clock drifts; a newer one replaces it). */
export const SAMPLE_LIFE_MS = 60_000;
/** Exchanges kept at most (the newest). */
const SAMPLES_KEPT = 16;

export interface ClockSample {
  /** the server's clock minus this one's, ms */
  offsetMs: number;
  /** the round trip, less the server's time between receive and send, ms */
  rttMs: number;
  /** when it was taken, this clock's ms */
  at: number;
}

/** This device's clock to a fraction of a ms where it has one (monotonic in a browser), else Date.now. */
export function deviceNow(): number {
  const p = (globalThis as { performance?: { now(): number; timeOrigin?: number } }).performance;
  return p && typeof p.timeOrigin === 'number' ? p.timeOrigin + p.now() : Date.now();
}

export class ServerClock {
  private samples: ClockSample[] = [];

  constructor(private readonly localNow: () => number = deviceNow) {}

  /** This device's clock now (the one the exchanges are taken in). */
  local(): number {
    return this.localNow();
  }

  /** One exchange: t0 and t3 this device's send and receive times, t1 and t2 the server's. */
  add(t0: number, t1: number, t2: number, t3: number): ClockSample {
    const sample = { offsetMs: (t1 - t0 + (t2 - t3)) / 2, rttMs: Math.max(0, t3 - t0 - Math.max(0, t2 - t1)), at: t3 };
    this.samples = [...this.samples.slice(-(SAMPLES_KEPT - 1)), sample];
    return sample;
  }

  /** The exchange in use: the least round trip of the last SAMPLE_LIFE_MS (else the newest), or null before the first. */
  best(now = this.localNow()): ClockSample | null {
    let best: ClockSample | null = null;
    for (const s of this.samples) if (now - s.at <= SAMPLE_LIFE_MS && (!best || s.rttMs < best.rttMs)) best = s;
    return best ?? this.samples.at(-1) ?? null;
  }

  /** The server's clock now (ms since the epoch); this device's until the first exchange. */
  now(): number {
    const local = this.localNow();
    return local + (this.best(local)?.offsetMs ?? 0);
  }

  /** Half the round trip of the exchange in use: the estimate is right within this many ms (Infinity before the first). */
  uncertaintyMs(): number {
    const b = this.best();
    return b ? b.rttMs / 2 : Infinity;
  }
}
