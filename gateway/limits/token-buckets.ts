// Token buckets by owner (an audience token's `sub`, an API key's id): pure, with the clock passed
// in. A bucket holds at most `burst` tokens and gains `ratePerSecond` a second; a request takes one.
// A bucket that has refilled to full is the same as no bucket, so idle owners cost nothing: the
// sweep forgets them, and the number of buckets is capped (the oldest is forgotten first, which
// only ever gives its owner a full bucket back, never less than its limit).

/** The rate and burst of one bucket. */
export interface Rate {
  /** > 0 */
  readonly ratePerSecond: number;
  /** >= 1 */
  readonly burst: number;
}

/** A bucket as handed between holders: its tokens, and the ms they were counted at. */
export type BucketState = readonly [number, number];

interface Bucket {
  tokens: number;
  /** ms when `tokens` was last brought up to date */
  at: number;
  /** ms when the bucket will be full again (then it is the same as none) */
  fullAt: number;
}

export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    /** the most owners held at once */
    private readonly maxOwners: number,
  ) {}

  /**
   * Takes one token from the owner's bucket: 0 when it had one, else the ms until it will have one
   * (nothing is taken then, so a refused request costs its owner nothing more).
   */
  take(owner: string, rate: Rate, now: number): number {
    const b = this.buckets.get(owner);
    if (!b) {
      if (this.buckets.size >= this.maxOwners) this.forgetOldest();
      this.buckets.set(owner, { tokens: rate.burst - 1, at: now, fullAt: now + 1000 / rate.ratePerSecond });
      return 0;
    }
    const tokens = Math.min(rate.burst, b.tokens + (Math.max(0, now - b.at) * rate.ratePerSecond) / 1000);
    b.at = Math.max(b.at, now);
    const taken = tokens >= 1;
    b.tokens = taken ? tokens - 1 : tokens;
    b.fullAt = b.at + ((rate.burst - b.tokens) * 1000) / rate.ratePerSecond;
    if (taken) return 0;
    return Math.ceil(((1 - tokens) * 1000) / rate.ratePerSecond);
  }

  /** The ms until the owner's bucket has a token (0: it has one now); nothing is taken. */
  waitFor(owner: string, rate: Rate, now: number): number {
    const b = this.buckets.get(owner);
    if (!b) return 0;
    const tokens = Math.min(rate.burst, b.tokens + (Math.max(0, now - b.at) * rate.ratePerSecond) / 1000);
    return tokens >= 1 ? 0 : Math.ceil(((1 - tokens) * 1000) / rate.ratePerSecond);
  }

  /** What the owner's bucket holds (tokens, and when they were counted), or null for a full one: what a process hands to the next. */
  state(owner: string): BucketState | null {
    const b = this.buckets.get(owner);
    return b ? [b.tokens, b.at] : null;
  }

  /**
   * Takes over a bucket another holder kept for the owner (`handed`, from `state`), of which
   * `spentSince` tokens were taken here meanwhile: the bucket holds the lower of its own tokens and
   * the handed ones less those, so two holders never give the owner two budgets. It may go below
   * zero: the debt is paid back by the refill before the next token.
   */
  takeOver(owner: string, handed: BucketState, spentSince: number, rate: Rate, now: number): void {
    const [tokens, at] = handed;
    const theirs = Math.min(rate.burst, tokens + (Math.max(0, now - at) * rate.ratePerSecond) / 1000) - spentSince;
    const b = this.buckets.get(owner);
    const ours = b ? Math.min(rate.burst, b.tokens + (Math.max(0, now - b.at) * rate.ratePerSecond) / 1000) : rate.burst;
    const held = Math.min(ours, theirs);
    if (held >= rate.burst) return;
    if (!b && this.buckets.size >= this.maxOwners) this.forgetOldest();
    this.buckets.set(owner, { tokens: held, at: Math.max(now, b?.at ?? now), fullAt: now + ((rate.burst - held) * 1000) / rate.ratePerSecond });
  }

  /** Forgets the buckets that are full again by `now` (their owners have been quiet long enough). */
  sweep(now: number): void {
    for (const [owner, b] of this.buckets) if (b.fullAt <= now) this.buckets.delete(owner);
  }

  private forgetOldest(): void {
    for (const owner of this.buckets.keys()) {
      this.buckets.delete(owner);
      return;
    }
  }
}
