// The moderation of one String action on its way in (gateway/actions/intake.ts): a muted
// participant or a text its control's policy refuses is refused with `moderated`, counted by
// reason and logged at most once per interval; a text of a `hold` control goes to the layout's
// moderation queue instead of the stream.
import { createHash, randomBytes } from 'node:crypto';
import type { Control } from '../../schemas/types.js';
import type { AudienceClaims } from '../auth/token-claims.js';
import { AppError, orUnavailable } from '../errors.js';
import type { LiveLayout } from '../layouts/layout-cache.js';
import type { GatewayMetrics } from '../metrics.js';
import type { ModerationStore, QueueBounds } from '../store/moderation.js';
import type { SummaryLog } from '../summary-log.js';
import { policyOf, type RefusalReason } from './text-policy.js';

/** A text refused by a full queue is told to come back after this long (seconds). */
const QUEUE_FULL_RETRY_SECONDS = 10;

const SAID: Record<RefusalReason | 'muted', string> = {
  blocklist: 'a word this show does not allow',
  profanity: 'a word of the word lists',
  url: 'a link',
  email: 'an email address',
  phone: 'a phone number',
  too_long: 'longer than the control allows',
  muted: 'this participant was muted by a moderator',
};

export class TextModeration {
  constructor(
    private readonly store: ModerationStore,
    private readonly bounds: QueueBounds,
    private readonly metrics: GatewayMetrics,
    private readonly refusals: SummaryLog,
  ) {}

  /** Refuses a String (throws `moderated`), or says whether it is to be held (true) or appended (false). */
  check(layout: LiveLayout, control: Control, sub: string, text: string, at: number): boolean {
    const until = layout.mutedSubs.get(sub);
    if (until !== undefined && until > at) this.refuse('muted', layout.layoutId);
    const policy = policyOf(control);
    if (!policy) return false;
    const reason = policy.refusal(text);
    if (reason) this.refuse(reason, layout.layoutId);
    return policy.mode === 'hold';
  }

  private refuse(reason: RefusalReason | 'muted', layoutId: string): never {
    this.metrics.moderationRefused.inc({ reason });
    this.refusals.count(reason, layoutId);
    throw new AppError('moderated', `The text was refused by moderation: ${SAID[reason]} (${reason}).`);
  }

  /**
   * Puts the text in the layout's queue; 429 rate_limited when the queue is full and the text
   * would need a new place in it (a participant at its share replaces its own oldest). With an Idempotency-Key the item's id comes from it, so a
   * retry is queued once.
   */
  async hold(layout: LiveLayout, control: Control, claims: AudienceClaims, text: string, once: string, at: number): Promise<void> {
    // hex: an id never starts with "-" (audiencectl would read it as an option)
    const id = once === '' ? randomBytes(8).toString('hex') : createHash('sha256').update(`${claims.sub}\n${once}`).digest('hex').slice(0, 16);
    const r = await orUnavailable(
      this.store.hold({ id, layoutId: layout.layoutId, sub: claims.sub, lid: control.lid, address: control.address, text, heldAt: at, exp: claims.exp * 1000 }, this.bounds),
    );
    if (r.added) this.metrics.moderationHeld.inc();
    if (r.expired > 0) this.metrics.moderationDropped.inc({ reason: 'expired' }, r.expired);
    if (r.droppedParticipant > 0) this.metrics.moderationDropped.inc({ reason: 'participant' }, r.droppedParticipant);
    if (r.refusedFull) {
      this.metrics.moderationDropped.inc({ reason: 'full' });
      throw new AppError('rate_limited', `The moderation queue of this layout is full (${this.bounds.perLayout} texts wait for a moderator); send again later.`, undefined, [['retry-after', String(QUEUE_FULL_RETRY_SECONDS)]]);
    }
  }
}
