// Admission to the live channel, decided before the upgrade so a refusal costs no socket: the
// process's caps (sockets held, new sockets a second: 503 with Retry-After, so a reconnect storm
// cannot take a process down; the new-socket budget is spent only by upgrades whose token passed),
// one participant's opens a minute (429 with Retry-After, at the cost of the token check alone,
// which a reconnect finds cached), so one token cannot churn a process's sockets, and each peer
// address's refused upgrades (past them 429 for any token not checked here yet, so a flood of bad
// upgrades costs neither the process's budget nor a verify each).
import type { AudienceClaims } from '../auth/token-claims.js';
import { AppError } from '../errors.js';
import { TokenBuckets } from '../limits/token-buckets.js';

/** Participants whose opens are remembered at once (a full bucket is forgotten; the oldest goes first past this). */
const PARTICIPANTS_TRACKED = 100_000;
/** Peer addresses whose refusals are remembered at once, likewise. */
const ADDRESSES_TRACKED = 100_000;

export class Admission {
  /** the upgrades accepted lately (one bucket: this process's) */
  private readonly upgrades = new TokenBuckets(1);
  /** each participant's upgrades lately */
  private readonly opens = new TokenBuckets(PARTICIPANTS_TRACKED);
  /** each peer address's refused upgrades lately */
  private readonly refusals = new TokenBuckets(ADDRESSES_TRACKED);
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly o: {
      maxSockets: number;
      newSocketsPerSecond: number;
      opensPerParticipantPerMinute: number;
      refusedUpgradesPerAddressPerSecond: number;
      now: () => number;
    },
    /** sockets open now (an upgrade under way is not counted yet, so a burst may pass the cap by a few) */
    private readonly held: () => number,
  ) {
    this.sweeper = setInterval(() => {
      this.opens.sweep(this.o.now());
      this.refusals.sweep(this.o.now());
    }, 10_000);
    this.sweeper.unref();
  }

  /** Before anything else is spent on an upgrade: a process at its socket cap refuses at the door (503). */
  process(): void {
    if (this.held() >= this.o.maxSockets) throw new AppError('unavailable', 'This gateway holds as many live sockets as it may; connect again (to another gateway).', undefined, [['retry-after', '1']]);
  }

  /** An upgrade whose token and layout passed: the process's new sockets a second (503), so a reconnect storm is spread. */
  newSocket(): void {
    if (this.upgrades.take('upgrades', { ratePerSecond: this.o.newSocketsPerSecond, burst: this.o.newSocketsPerSecond }, this.o.now()) > 0) {
      throw new AppError('unavailable', 'Too many new live sockets this second; connect again shortly.', undefined, [['retry-after', '1']]);
    }
  }

  /** Once the token is known: the participant's opens a minute (429 rate_limited with Retry-After). */
  participant(claims: AudienceClaims): void {
    const perMinute = this.o.opensPerParticipantPerMinute;
    const waitMs = this.opens.take(claims.sub, { ratePerSecond: perMinute / 60, burst: perMinute }, this.o.now());
    if (waitMs > 0) throw new AppError('rate_limited', 'This participant opened too many live sockets lately; connect again as Retry-After says.', undefined, [['retry-after', String(Math.ceil(waitMs / 1000))]]);
  }

  /**
   * Before a token not in the cache is checked: 429 when the address is past its refused upgrades.
   * A refusal is counted once answered, so the upgrades whose verify is under way when the budget
   * runs out still get theirs: the bound overshoots by those, never by more.
   */
  address(address: string): void {
    const waitMs = this.refusals.waitFor(address, this.refusalRate(), this.o.now());
    if (waitMs > 0) throw new AppError('rate_limited', 'Too many refused live upgrades from this address lately; connect again as Retry-After says.', undefined, [['retry-after', String(Math.ceil(waitMs / 1000))]]);
  }

  /** An upgrade from this address was refused (a 4xx of its own making): it spends one. */
  refused(address: string): void {
    this.refusals.take(address, this.refusalRate(), this.o.now());
  }

  private refusalRate(): { ratePerSecond: number; burst: number } {
    const rate = this.o.refusedUpgradesPerAddressPerSecond;
    return { ratePerSecond: rate, burst: 2 * rate };
  }

  stop(): void {
    clearInterval(this.sweeper);
  }
}
