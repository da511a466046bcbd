// Admission to the live channel, decided before the upgrade so a refusal costs no socket: the
// process's caps (sockets held, new sockets a second: 503 with Retry-After, so a reconnect storm
// cannot take a process down), and one participant's opens a minute (429 with Retry-After, at the
// cost of the token check alone, which a reconnect finds cached), so one token cannot churn a
// process's sockets.
import type { AudienceClaims } from '../auth/audience-tokens.js';
import { AppError } from '../errors.js';
import { TokenBuckets } from '../limits/token-buckets.js';

/** Participants whose opens are remembered at once (a full bucket is forgotten; the oldest goes first past this). */
const PARTICIPANTS_TRACKED = 100_000;

export class Admission {
  /** the upgrades accepted lately (one bucket: this process's) */
  private readonly upgrades = new TokenBuckets(1);
  /** each participant's upgrades lately */
  private readonly opens = new TokenBuckets(PARTICIPANTS_TRACKED);
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly o: { maxSockets: number; newSocketsPerSecond: number; opensPerParticipantPerMinute: number; now: () => number },
    /** sockets open now (an upgrade under way is not counted yet, so a burst may pass the cap by a few) */
    private readonly held: () => number,
  ) {
    this.sweeper = setInterval(() => this.opens.sweep(this.o.now()), 10_000);
    this.sweeper.unref();
  }

  /** Before anything else is spent on an upgrade: a storm of reconnects is refused at the door (503). */
  process(): void {
    if (this.held() >= this.o.maxSockets) throw new AppError('unavailable', 'This gateway holds as many live sockets as it may; connect again (to another gateway).', undefined, [['retry-after', '1']]);
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

  stop(): void {
    clearInterval(this.sweeper);
  }
}
