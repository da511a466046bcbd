// POST /action (spec 4.3), the hot path: a cached token check, an in-memory layout lookup, pure value
// checks, then the append (group commit: one call per layout in flight); 200 only after Redis acknowledged it.
// OPTIONS answers CORS preflight.
import { createHash } from 'node:crypto';
import { WHOLE_DOCUMENT, describeFirstError, validateActionRequest } from '../../schemas/validators.js';
import { CONTROL_TYPES, type ActionEntry, type ActionRequest } from '../../schemas/types.js';
import { checkAction } from '../actions/check-action.js';
import type { AggregatedControl } from '../actions/crowd-fold.js';
import { entryId } from '../actions/entry-id.js';
import type { AudienceClaims } from '../auth/audience-tokens.js';
import { AppError } from '../errors.js';
import { ok, type Reply } from '../http/reply.js';
import { parseJson, type RequestHead, type Route } from '../http/server.js';
import type { LiveLayout } from '../layouts/layout-cache.js';
import type { CounterSeries } from '../live-metrics.js';
import type { RouteDeps } from './deps.js';

const OK = ok({ success: true });
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
  const untyped = outcomes('unknown');
  const byType = new Map(CONTROL_TYPES.map((t) => [t, outcomes(t)]));
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
      handle(head, raw) {
        let claims: AudienceClaims | Promise<AudienceClaims>;
        try {
          claims = d.tokens.verify(bearerToken(head.headers.authorization));
        } catch (e) {
          return untyped.rejected(e);
        }
        if (claims instanceof Promise) return claims.then((c) => checkBody(head, raw, c), untyped.rejected);
        return checkBody(head, raw, claims);
      },
    },
  ];

  /**
   * The answer handlers of each control type (and of a request whose type is not known yet), made
   * once: they count the outcome for the metrics, so an accepted action costs no closure of its own.
   */
  function outcomes(type: string): { accepted: () => Reply; rejected: (e: unknown) => never } {
    let accepted: CounterSeries | undefined; // on first use: no "unknown" type is ever accepted
    return {
      accepted: () => {
        (accepted ??= d.metrics.action(type, 'accepted')).inc();
        return OK;
      },
      rejected: (e: unknown): never => {
        d.metrics.action(type, e instanceof AppError ? e.code : 'internal').inc();
        throw e;
      },
    };
  }

  // The checks run synchronously when the token and the layout are cached (the common case), so an
  // accepted action costs two promises: the append's and the answer's. A miss continues once the
  // cache is filled.

  function checkBody(head: RequestHead, raw: Buffer | null, claims: AudienceClaims): Promise<Reply> {
    let body: unknown;
    try {
      body = parseJson(raw);
      if (!validateActionRequest(body, WHOLE_DOCUMENT)) throw new AppError('invalid_body', describeFirstError(validateActionRequest.errors));
    } catch (e) {
      return untyped.rejected(e);
    }
    const { accepted, rejected } = byType.get(body.type)!; // the schema allows only these types
    try {
      if (body.layoutId !== claims.layoutId) throw new AppError('token_layout_mismatch');
      const layout = d.layouts.get(body.layoutId);
      const appended = layout instanceof Promise ? layout.then((l) => append(head, body, claims, l)) : append(head, body, claims, layout);
      return appended.then(accepted, rejected);
    } catch (e) {
      return rejected(e);
    }
  }

  function append(head: RequestHead, body: ActionRequest, claims: AudienceClaims, layout: LiveLayout | null): Promise<void> {
    if (!layout || layout.teamId !== claims.team) throw new AppError('layout_not_found', undefined, 400);
    const { control, value } = checkAction(layout, body);
    const once = head.headers['idempotency-key'];
    if (control.aggregate) {
      // Folded into the crowd's summary: a repeat of a latest value changes nothing, so an
      // Idempotency-Key is only checked for its form (a repeated press does count for `rate`).
      if (once !== '' && !IDEMPOTENCY_KEY.test(once)) throw new AppError('idempotency_key_invalid');
      return d.crowd.add(layout.layoutId, control as AggregatedControl, claims.sub, value, head.receivedAt);
    }
    const entry: ActionEntry = {
      v: 1,
      id: entryId(),
      layoutId: layout.layoutId,
      lid: control.lid,
      address: control.address,
      type: control.type,
      value,
      ts: head.receivedAt,
    };
    if (once === '') return d.actions.append(entry, head.aborted); // absent (uWS reads an empty header as absent too)
    if (!IDEMPOTENCY_KEY.test(once)) throw new AppError('idempotency_key_invalid');
    const fingerprint = createHash('sha256').update(JSON.stringify([entry.layoutId, entry.lid, entry.type, entry.value])).digest('base64url');
    return d.actions.appendOnce(entry, d.keys.actionOnce(entry.layoutId, claims.sub, once), fingerprint, d.idempotencyTtlSeconds, head.aborted);
  }
}
