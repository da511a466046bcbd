// How a simulated phone behaves, as pure functions of a seeded random source: when it acts
// (Poisson: exponential think times), which control it touches, and what it sends for each type.
// Sliders and XY pads are dragged (a random walk from the last value), votes follow a preference
// split the seed fixes for the whole crowd, buttons are mashed in short bursts, toggles flip.

/** mulberry32: numbers in [0, 1) from a 32-bit seed, the same sequence for the same seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The wait until the next event of a Poisson process of `ratePerS`, in ms. */
export function exponentialMs(random: () => number, ratePerS: number): number {
  return (-Math.log(1 - random()) / ratePerS) * 1000;
}

/** A control as discovery and page frames give it. */
export interface PlayControl {
  lid: number;
  type: string;
  options?: { index: number }[];
  aggregate?: { mode: string };
}

export interface PlayAction {
  lid: number;
  type: string;
  value?: unknown;
}

const CHEERS = ['encore', 'more', 'hello', 'yes', 'louder', 'again'];
const clamp01 = (x: number) => Math.min(1, Math.max(0, Math.round(x * 1000) / 1000));

/** One phone's taste: the last values it sent, so a drag continues where it left off. */
export class PhoneTaste {
  private readonly last = new Map<number, unknown>();

  constructor(
    private readonly random: () => number,
    /** the crowd's preference over option indexes (the same for every phone of a run) */
    private readonly preference: (options: number) => number[],
  ) {}

  /** A burst length for a Button press (1 to 4: mashing). */
  burst(): number {
    return 1 + Math.floor(this.random() ** 2 * 4);
  }

  /** An action on one of `controls` (a vote on an Index control when `vote` and there is one). */
  act(controls: readonly PlayControl[], vote = false): PlayAction | null {
    if (controls.length === 0) return null;
    const ballots = vote ? controls.filter((c) => c.type === 'Index') : [];
    const c = ballots.length > 0 ? ballots[Math.floor(this.random() * ballots.length)]! : controls[Math.floor(this.random() * controls.length)]!;
    const value = this.valueFor(c);
    if (value !== undefined) this.last.set(c.lid, value);
    return value === undefined ? { lid: c.lid, type: c.type } : { lid: c.lid, type: c.type, value };
  }

  private valueFor(c: PlayControl): unknown {
    const last = this.last.get(c.lid);
    switch (c.type) {
      case 'Slider':
        return clamp01(typeof last === 'number' ? last + (this.random() - 0.5) * 0.2 : this.random());
      case 'XYPad': {
        const [x, y] = Array.isArray(last) ? (last as number[]) : [this.random(), this.random()];
        return [clamp01(x! + (this.random() - 0.5) * 0.2), clamp01(y! + (this.random() - 0.5) * 0.2)];
      }
      case 'Toggle':
        return typeof last === 'boolean' ? !last : this.random() < 0.5;
      case 'Index': {
        const weights = this.preference(c.options?.length ?? 1);
        let u = this.random();
        for (const [i, w] of weights.entries()) if ((u -= w) < 0) return c.options?.[i]?.index ?? i;
        return c.options?.at(-1)?.index ?? 0;
      }
      case 'String':
        return CHEERS[Math.floor(this.random() * CHEERS.length)];
      default:
        return undefined; // Button: no value
    }
  }
}

/** The crowd's preference split over n options: fixed per run by the seed, skewed (one option leads). */
export function preferenceSplit(seed: number): (n: number) => number[] {
  const cache = new Map<number, number[]>();
  return (n) => {
    let w = cache.get(n);
    if (!w) {
      const random = seededRandom(seed ^ (n * 2654435761));
      const raw = Array.from({ length: n }, () => random() ** 2);
      const sum = raw.reduce((a, b) => a + b, 0) || 1;
      cache.set(n, (w = raw.map((x) => x / sum)));
    }
    return w;
  };
}
