// One audience action from its checked envelope to the stream: the way every action comes in (POST
// /action, the live channel) once its token is verified and its layout known. Counts it against the
// participant's budget first, checks it against the layout, then hands it to the crowd fold, the
// action log's group commit, or (with an Idempotency-Key) the once-only append. Throws the AppError
// that refuses it before anything is stored; afterwards it answers through the waiter.
import { createHash } from 'node:crypto';
import type { ActionEntry, ActionRequest } from '../../schemas/types.js';
import type { LiveRestatedValue } from '../../schemas/validators.js';
import { revokedByLayout, type AudienceClaims } from '../auth/token-claims.js';
import { AppError } from '../errors.js';
import type { LiveLayout } from '../layouts/layout-cache.js';
import { ratesOf, type ActionRates } from '../limits/participant-limits.js';
import type { RouteDeps } from '../routes/deps.js';
import type { AppendWaiter, OnceRecord } from './action-log.js';
import { checkAction } from './check-action.js';
import type { AggregatedControl, HandedValue } from '../crowd/crowd-fold.js';
import { entryId } from '../store/entry-id.js';
import { FRAME_LIMITS } from '../../schemas/live-protocol.js';

/** Idempotency-Key: 1 to 64 of A-Z a-z 0-9 . _ : - */
export const IDEMPOTENCY_KEY = FRAME_LIMITS.idempotencyKey; // the header's and the live frame's rule: one, in the protocol module

/**
 * Who is told an action's fate: as the action log tells, or once a promise settles (crowd,
 * Idempotency-Key, or a String held for moderation: answered as held).
 */
export interface IntakeWaiter extends AppendWaiter {
  after(settled: Promise<void>): void;
  held(settled: Promise<void>): void;
}

export class ActionIntake {
  /** a layout's own rates, made once per cached layout (a re-load makes a new LiveLayout) */
  private readonly layoutRates = new WeakMap<LiveLayout, ActionRates>();

  constructor(private readonly d: RouteDeps) {}

  ratesFor(layout: LiveLayout): ActionRates {
    if (!layout.limits) return this.d.actionRates;
    let r = this.layoutRates.get(layout);
    if (!r) this.layoutRates.set(layout, (r = ratesOf(this.d.actionRates, layout.limits)));
    return r;
  }

  /**
   * Takes one action of a layout, for POST /action and the live channel alike: looks the layout up
   * (from memory at once, else from Redis) and takes the action. `once` is its Idempotency-Key (''
   * for none), `at` when it arrived. Throws what refuses it at once; otherwise the waiter hears
   * once, stored or failed.
   */
  accept(body: ActionRequest, claims: AudienceClaims, once: string, at: number, waiter: IntakeWaiter): void {
    const layout = this.d.layouts.get(body.layoutId);
    if (layout instanceof Promise) layout.then((l) => this.take(body, claims, l, once, at, waiter)).catch((e: unknown) => waiter.failed(e));
    else this.take(body, claims, layout, once, at, waiter);
  }

  /** take() once the layout is known: the checks, the budget, and the action's way to the stream. */
  private take(body: ActionRequest, claims: AudienceClaims, layout: LiveLayout | null, once: string, at: number, waiter: IntakeWaiter): void {
    const d = this.d;
    if (!layout || layout.teamId !== claims.team) throw new AppError('layout_not_found', undefined, 400);
    if (revokedByLayout(claims, layout)) throw new AppError('token_revoked');
    // a participant this process does not hold yet is claimed first, with what the process it came
    // from kept of its budget: one budget over all processes (participant-claims.ts)
    const acquiring = d.claims.acquire(layout.layoutId, claims.sub, at);
    if (acquiring) return void acquiring.then(() => this.take(body, claims, layout, once, at, waiter)).catch((e: unknown) => waiter.failed(e));
    // before anything is checked or stored: whatever a participant sends counts against its budget
    d.participants.check(claims.sub, body.type, this.ratesFor(layout), at);
    d.claims.seen(layout.layoutId, claims.sub, at, body.type === 'String'); // this process holds the participant now
    const { control, value } = checkAction(layout, body);
    const held = control.type === 'String' && d.moderation.check(layout, control, claims.sub, value as string, at);
    // The Idempotency-Key's form, whichever way the action goes: a held text keeps the key with it,
    // and a crowd value is only checked for it (folded into the crowd's summary, a repeat of a
    // latest value changes nothing; a repeated press does count for `rate`).
    if (once !== '' && !IDEMPOTENCY_KEY.test(once)) throw new AppError('idempotency_key_invalid');
    if (held) return waiter.held(d.moderation.hold(layout, control, claims, value as string, once, at));
    if (control.aggregate) {
      // a zone the layout no longer declares (re-imported since the token was minted) counts in the whole crowd only
      const zone = claims.zone !== '' && layout.zones.includes(claims.zone) ? claims.zone : '';
      return waiter.after(d.crowd.add(layout.layoutId, control as AggregatedControl, claims.sub, value, at, zone, claims.mintedAt));
    }
    if (once === '') return d.actions.appendAction(layout.layoutId, control, value, at, waiter);
    const entry: ActionEntry = { v: 1, id: entryId(), layoutId: layout.layoutId, lid: control.lid, address: control.address, type: control.type, value, ts: at };
    // 96 bits of the action: enough to tell one participant's actions apart, 16 characters stored
    const fingerprint = createHash('sha256').update(JSON.stringify([entry.layoutId, entry.lid, entry.type, entry.value])).digest('base64url').slice(0, 16);
    const windowMs = d.idempotency.windowSeconds * 1000;
    const generation = Math.floor(at / windowMs);
    const record: OnceRecord = {
      current: d.keys.actionOnce(entry.layoutId, claims.sub, generation),
      previous: d.keys.actionOnce(entry.layoutId, claims.sub, generation - 1),
      key: once,
      fingerprint,
      expiresAt: (generation + 2) * windowMs,
      cap: d.idempotency.keysPerParticipant,
      nextWindowAt: (generation + 1) * windowMs,
    };
    waiter.after(d.actions.appendOnce(entry, record, () => waiter.aborted()));
  }

  /**
   * A participant's latest values as its app last sent them (a live socket's `restate` after a
   * reconnect), each counted with the time it was sent (`at` less its age) where this process holds
   * no value of the participant for that control: a participant whose process was lost, with its
   * values, counts again at once. A value held here (newer, or handed over by the process the
   * participant left) wins. Costs one action of the budget; values of controls that are not
   * aggregated on the live page (a page switch since) and Button presses are passed over. Nothing
   * reaches the stream. Throws what refuses it, as `take` does.
   */
  async restate(values: readonly LiveRestatedValue[], claims: AudienceClaims, layout: LiveLayout | null, at: number): Promise<void> {
    const d = this.d;
    if (!layout || layout.teamId !== claims.team) throw new AppError('layout_not_found', undefined, 400);
    if (revokedByLayout(claims, layout)) throw new AppError('token_revoked');
    const acquiring = d.claims.acquire(layout.layoutId, claims.sub, at);
    if (acquiring) await acquiring;
    d.participants.check(claims.sub, 'restate', this.ratesFor(layout), at);
    d.claims.seen(layout.layoutId, claims.sub, at);
    const zone = claims.zone !== '' && layout.zones.includes(claims.zone) ? claims.zone : '';
    const handed: HandedValue[] = [];
    for (const v of values) {
      const control = layout.controls.get(v.lid);
      if (!control?.aggregate || control.aggregate.mode === 'rate' || control.type !== v.type) continue;
      handed.push({ lid: v.lid, at: at - v.ageMs, zone, minted: claims.mintedAt, value: checkAction(layout, { layoutId: layout.layoutId, lid: v.lid, type: v.type, value: v.value }).value });
    }
    d.crowd.adopt(layout.layoutId, claims.sub, handed, (lid) => layout.controls.get(lid) as AggregatedControl | undefined);
  }
}
