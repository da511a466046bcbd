// What one participant (an audience token's `sub`) may send: a token bucket for every action, and a
// second one that String actions also take from (a String reaches the displays as text). The
// buckets live in the process that holds the participant (participant-claims.ts); one it moves to
// takes over what is left of them, so a participant has one budget over all processes. A layout's definition may set its own rates (`limits`); otherwise the
// gateway's configured defaults apply. A refused action is 429 `rate_limited` with Retry-After and
// costs no Redis write.
import type { ControlType, LayoutLimits } from '../../schemas/types.js';
import { AppError } from '../errors.js';
import { TokenBuckets, type BucketState, type Rate } from './token-buckets.js';

/** A participant's budget as one process hands it to the next (participant-claims.ts): each bucket not full. */
export interface HandedBudget {
  a?: BucketState;
  s?: BucketState;
}

export interface ActionRates {
  readonly actions: Rate;
  readonly strings: Rate;
}

/** The rates a layout's `limits` set, over the defaults. */
export function ratesOf(defaults: ActionRates, limits: LayoutLimits | undefined): ActionRates {
  if (!limits) return defaults;
  return {
    actions: { ratePerSecond: limits.actionsPerSecond ?? defaults.actions.ratePerSecond, burst: limits.actionBurst ?? defaults.actions.burst },
    strings: { ratePerSecond: limits.stringsPerSecond ?? defaults.strings.ratePerSecond, burst: limits.stringBurst ?? defaults.strings.burst },
  };
}

/** 429 rate_limited, with Retry-After in whole seconds (at least 1) and the wait in ms in the message. */
export function rateLimited(waitMs: number, what: string): AppError {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  return new AppError('rate_limited', `Too many ${what}; retry in ${waitMs} ms.`, undefined, [['retry-after', String(seconds)]]);
}

export class ParticipantLimits {
  private readonly actions: TokenBuckets;
  private readonly strings: TokenBuckets;
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    /** the most participants whose buckets are held at once (a String sender holds two) */
    maxParticipants: number,
    private readonly now: () => number = Date.now,
    /** told of every refusal (the log summary and the metrics) */
    private readonly onRefused: (kind: 'actions' | 'strings') => void = () => {},
  ) {
    this.actions = new TokenBuckets(maxParticipants);
    this.strings = new TokenBuckets(maxParticipants);
    this.sweeper = setInterval(() => this.sweep(), 1000);
    this.sweeper.unref();
  }

  /** Takes one action of `type` (a restatement: one action) from the participant's budget, or throws 429 rate_limited. `now`: the request's arrival, which the caller has. */
  check(sub: string, type: ControlType | 'restate', rates: ActionRates, now = this.now()): void {
    const wait = this.actions.take(sub, rates.actions, now);
    if (wait > 0) {
      this.onRefused('actions');
      throw rateLimited(wait, 'actions from this participant');
    }
    if (type !== 'String') return;
    const waitString = this.strings.take(sub, rates.strings, now);
    if (waitString > 0) {
      this.onRefused('strings');
      throw rateLimited(waitString, 'String actions from this participant');
    }
  }

  /** What is left of the participant's budget here, for the process it moved to. */
  handOff(sub: string): HandedBudget {
    const a = this.actions.state(sub);
    const s = this.strings.state(sub);
    return { ...(a && { a }), ...(s && { s }) };
  }

  /**
   * The budget the process a participant came from handed over; `spent` actions (`spentStrings`
   * Strings) were taken here since this process claimed it. From now on the participant has what
   * is left of one budget, not a budget here and another there.
   */
  takeOver(sub: string, handed: HandedBudget, spent: number, spentStrings: number, rates: ActionRates): void {
    const now = this.now();
    if (handed.a) this.actions.takeOver(sub, handed.a, spent, rates.actions, now);
    if (handed.s) this.strings.takeOver(sub, handed.s, spentStrings, rates.strings, now);
  }

  sweep(): void {
    const now = this.now();
    this.actions.sweep(now);
    this.strings.sweep(now);
  }

  stop(): void {
    clearInterval(this.sweeper);
  }
}

/** How fast one API key may mint audience tokens (per process): its own rate if it was created with one, else the defaults. */
export class MintLimits {
  private readonly buckets = new TokenBuckets(100_000);
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly defaults: Rate,
    private readonly now: () => number = Date.now,
    private readonly onRefused: () => void = () => {},
  ) {
    this.sweeper = setInterval(() => this.buckets.sweep(this.now()), 1000);
    this.sweeper.unref();
  }

  /** Takes one mint from the key's budget, or throws 429 rate_limited. */
  check(key: { keyId: string; mintRate?: number | undefined; mintBurst?: number | undefined }): void {
    const rate = key.mintRate === undefined && key.mintBurst === undefined ? this.defaults : { ratePerSecond: key.mintRate ?? this.defaults.ratePerSecond, burst: key.mintBurst ?? this.defaults.burst };
    const wait = this.buckets.take(key.keyId, rate, this.now());
    if (wait > 0) {
      this.onRefused();
      throw rateLimited(wait, 'tokens minted with this API key');
    }
  }

  stop(): void {
    clearInterval(this.sweeper);
  }
}
