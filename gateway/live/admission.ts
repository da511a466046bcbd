// Admission to the live channel, decided before the upgrade so a refusal costs no socket: the
// process's caps (sockets held, new sockets a second: 503 with Retry-After, so a reconnect storm
// cannot take a process down; the new-socket budget is spent only by upgrades whose token passed),
// one participant's opens a minute (429 with Retry-After, at the cost of the token check alone,
// which a reconnect finds cached), so one token cannot churn a process's sockets, and each peer
// address's refused upgrades (past them 429 for any token not checked here yet, so a flood of bad
// upgrades costs neither the process's budget nor a verify each). A process whose event loop has
// been in one turn for BUSY_TURN_MS refuses new upgrades at the door too (503 with Retry-After):
// the upgrades that arrive together in a reconnect storm are all worked in the turn they arrive
// in, and unbounded they held a worker's loop for seconds, past the supervisor's heartbeat timeout.
import { performance } from 'node:perf_hooks';
import type { AudienceClaims } from '../auth/token-claims.js';
import { AppError } from '../errors.js';
import { TokenBuckets } from '../limits/token-buckets.js';

/** Participants whose opens are remembered at once (a full bucket is forgotten; the oldest goes first past this). */
const PARTICIPANTS_TRACKED = 100_000;
/** Peer addresses whose refusals are remembered at once, likewise. */
const ADDRESSES_TRACKED = 100_000;
/** How long one turn of the event loop may have run before new upgrades are refused at the door (ms). */
export const BUSY_TURN_MS = 250;
/** How often a timer marks that the loop turns (ms): a turn has run for at most the time since the last mark. */
const TURN_MARK_MS = 50;

export class Admission {
  /** the upgrades accepted lately (one bucket: this process's) */
  private readonly upgrades = new TokenBuckets(1);
  /** each participant's upgrades lately */
  private readonly opens = new TokenBuckets(PARTICIPANTS_TRACKED);
  /** each peer address's refused upgrades lately */
  private readonly refusals = new TokenBuckets(ADDRESSES_TRACKED);
  private readonly sweeper: NodeJS.Timeout;
  /** when a timer last ran (performance.now()): the loop has turned since */
  private turnMark = performance.now();
  private readonly marker: NodeJS.Timeout;

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
    this.marker = setInterval(() => (this.turnMark = performance.now()), TURN_MARK_MS);
    this.marker.unref();
  }

  /** Before anything else is spent on an upgrade: a process at its socket cap, or in a turn of its loop BUSY_TURN_MS long, refuses at the door (503). */
  process(): void {
    if (this.held() >= this.o.maxSockets) throw new AppError('unavailable', 'This gateway holds as many live sockets as it may; connect again (to another gateway).', undefined, [['retry-after', '1']]);
    if (performance.now() - this.turnMark > BUSY_TURN_MS) throw new AppError('unavailable', 'This gateway is busy with the sockets opening now; connect again shortly.', undefined, [['retry-after', '1']]);
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
    clearInterval(this.marker);
  }
}
