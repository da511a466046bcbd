// POST /action (spec 4.3), the hot path: a cached token check, an in-memory layout lookup, pure value
// checks, then the append (group commit: gateway/actions/action-log.ts); 200 only after Redis acknowledged it.
// OPTIONS answers CORS preflight.
import { createHash } from 'node:crypto';
import { WHOLE_DOCUMENT, describeFirstError, validateActionRequest } from '../../schemas/validators.js';
import { CONTROL_TYPES, type ActionEntry, type ActionRequest } from '../../schemas/types.js';
import { checkAction } from '../actions/check-action.js';
import type { AggregatedControl } from '../actions/crowd-fold.js';
import type { AppendWaiter, OnceRecord } from '../actions/action-log.js';
import { entryId } from '../actions/entry-id.js';
import { newEntryText } from '../actions/entry-text.js';
import { revokedByLayout, type AudienceClaims } from '../auth/audience-tokens.js';
import { AppError } from '../errors.js';
import { ok, prepared } from '../http/reply.js';
import { parseJson } from '../http/body.js';
import { LATER, type RequestHead, type Responder, type Route } from '../http/route.js';
import type { LiveLayout } from '../layouts/layout-cache.js';
import { ratesOf, type ActionRates } from '../limits/participant-limits.js';
import type { CounterSeries } from '../live-metrics.js';
import type { GatewayMetrics } from '../metrics.js';
import type { RouteDeps } from './deps.js';

const OK = prepared(ok({ success: true }));
/** Idempotency-Key: 1 to 64 of A-Z a-z 0-9 . _ : - */
const IDEMPOTENCY_KEY = /^[A-Za-z0-9._:-]{1,64}$/;

/** The token of `Authorization: Bearer <token>`, or token_missing. */
export function bearerToken(header: string): string {
  if (header.length > 7 && header.slice(0, 7).toLowerCase() === 'bearer ') {
    const token = header.slice(7).trim();
    if (token) return token;
  }
  throw new AppError('token_missing');
}

export function actionRoutes(d: RouteDeps): Route[] {
  const replyHeaders: Route['replyHeaders'] = (head) => d.cors.replyHeaders(head.headers.origin);
  const untyped = new Outcomes(d.metrics, 'unknown');
  const byType = new Map(CONTROL_TYPES.map((t) => [t, new Outcomes(d.metrics, t)]));
  // a layout's own rates, made once per cached layout (a re-load makes a new LiveLayout)
  const layoutRates = new WeakMap<LiveLayout, ActionRates>();
  const ratesFor = (layout: LiveLayout): ActionRates => {
    if (!layout.limits) return d.actionRates;
    let r = layoutRates.get(layout);
    if (!r) layoutRates.set(layout, (r = ratesOf(d.actionRates, layout.limits)));
    return r;
  };
  return [
    {
      method: 'options',
      pattern: '/action',
      headers: ['origin'],
      replyHeaders,
      handle: (head) => d.cors.preflight(head.headers.origin),
    },
    {
      method: 'post',
      pattern: '/action',
      body: true,
      headers: ['authorization', 'origin', 'idempotency-key'],
      replyHeaders,
      handle(head, raw, respond) {
        let claims: AudienceClaims | Promise<AudienceClaims>;
        try {
          claims = d.tokens.verify(bearerToken(head.headers.authorization));
        } catch (e) {
          new Answer(head, respond, untyped).failed(e);
          return LATER;
        }
        if (claims instanceof Promise) {
          claims.then(
            (c) => checkBody(head, raw, c, respond),
            (e: unknown) => new Answer(head, respond, untyped).failed(e),
          );
        } else {
          checkBody(head, raw, claims, respond);
        }
        return LATER;
      },
    },
  ];

  // The checks run synchronously when the token and the layout are cached (the common case), and
  // the action log answers through the request's Answer: an accepted action costs no promise.
  // A cache miss continues once the cache is filled. Never throws: every outcome is answered.

  function checkBody(head: RequestHead, raw: Buffer | null, claims: AudienceClaims, respond: Responder): void {
    let body: unknown;
    try {
      body = parseJson(raw);
      if (!validateActionRequest(body, WHOLE_DOCUMENT)) throw new AppError('invalid_body', describeFirstError(validateActionRequest.errors));
    } catch (e) {
      return new Answer(head, respond, untyped).failed(e);
    }
    const answer = new Answer(head, respond, byType.get(body.type)!); // the schema allows only these types
    try {
      if (body.layoutId !== claims.layoutId) throw new AppError('token_layout_mismatch');
      const layout = d.layouts.get(body.layoutId);
      if (layout instanceof Promise) layout.then((l) => append(body, claims, l, answer)).catch((e: unknown) => answer.failed(e));
      else append(body, claims, layout, answer);
    } catch (e) {
      answer.failed(e);
    }
  }

  /** Hands the action to the action log (or the crowd fold); throws what refuses it before that. */
  function append(body: ActionRequest, claims: AudienceClaims, layout: LiveLayout | null, answer: Answer): void {
    if (!layout || layout.teamId !== claims.team) throw new AppError('layout_not_found', undefined, 400);
    if (revokedByLayout(claims, layout)) throw new AppError('token_revoked');
    // before anything is checked or stored: whatever a participant sends counts against its budget
    d.participants.check(claims.sub, body.type, ratesFor(layout), answer.head.receivedAt);
    const { control, value } = checkAction(layout, body);
    const once = answer.head.headers['idempotency-key'];
    if (control.aggregate) {
      // Folded into the crowd's summary: a repeat of a latest value changes nothing, so an
      // Idempotency-Key is only checked for its form (a repeated press does count for `rate`).
      if (once !== '' && !IDEMPOTENCY_KEY.test(once)) throw new AppError('idempotency_key_invalid');
      return answer.after(d.crowd.add(layout.layoutId, control as AggregatedControl, claims.sub, value, answer.head.receivedAt));
    }
    if (once === '') return d.actions.appendFor(layout.layoutId, newEntryText(layout.layoutId, control, value, answer.head.receivedAt), answer); // absent (uWS reads an empty header as absent too)
    if (!IDEMPOTENCY_KEY.test(once)) throw new AppError('idempotency_key_invalid');
    const entry: ActionEntry = {
      v: 1,
      id: entryId(),
      layoutId: layout.layoutId,
      lid: control.lid,
      address: control.address,
      type: control.type,
      value,
      ts: answer.head.receivedAt,
    };
    // 96 bits of the action: enough to tell one participant's actions apart, 16 characters stored
    const fingerprint = createHash('sha256').update(JSON.stringify([entry.layoutId, entry.lid, entry.type, entry.value])).digest('base64url').slice(0, 16);
    const windowMs = d.idempotency.windowSeconds * 1000;
    const generation = Math.floor(entry.ts / windowMs);
    const record: OnceRecord = {
      current: d.keys.actionOnce(entry.layoutId, claims.sub, generation),
      previous: d.keys.actionOnce(entry.layoutId, claims.sub, generation - 1),
      key: once,
      fingerprint,
      expiresAt: (generation + 2) * windowMs,
      cap: d.idempotency.keysPerParticipant,
      nextWindowAt: (generation + 1) * windowMs,
    };
    answer.after(d.actions.appendOnce(entry, record, () => answer.aborted()));
  }
}

/** The count of one control type's answers for the metrics (or of requests whose type is not known yet). */
class Outcomes {
  private acceptedSeries: CounterSeries | undefined; // on first use: no "unknown" type is ever accepted

  constructor(
    private readonly metrics: GatewayMetrics,
    private readonly type: string,
  ) {}

  accepted(): void {
    (this.acceptedSeries ??= this.metrics.action(this.type, 'accepted')).inc();
  }

  rejected(e: unknown): void {
    this.metrics.action(this.type, e instanceof AppError ? e.code : 'internal').inc();
  }
}

/** One action's answer, counted and written once the log stored it or could not. */
class Answer implements AppendWaiter {
  constructor(
    readonly head: RequestHead,
    private readonly respond: Responder,
    private readonly outcomes: Outcomes,
  ) {}

  stored(): void {
    this.outcomes.accepted();
    this.respond.reply(OK);
  }

  failed(e: unknown): void {
    this.outcomes.rejected(e);
    this.respond.fail(e);
  }

  aborted(): boolean {
    return this.head.aborted();
  }

  /** Answers when `settled` does (the paths off the hot one: the crowd fold, Idempotency-Key). */
  after(settled: Promise<void>): void {
    settled.then(
      () => this.stored(),
      (e: unknown) => this.failed(e),
    );
  }
}
