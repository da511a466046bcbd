// POST /action (spec 4.3), the hot path: a cached token check, an in-memory layout lookup, pure value
// checks, then the append (group commit: one call per layout in flight); 200 only after Redis acknowledged it.
// OPTIONS answers CORS preflight.
import { createHash } from 'node:crypto';
import { describeFirstError, validateActionRequest } from '../../schemas/validators.js';
import type { ActionEntry, ActionRequest } from '../../schemas/types.js';
import { checkAction } from '../actions/check-action.js';
import { entryId } from '../actions/entry-id.js';
import type { AudienceClaims } from '../auth/audience-tokens.js';
import { AppError } from '../errors.js';
import { ok } from '../http/reply.js';
import { parseJson, type RequestHead, type Route } from '../http/server.js';
import type { LiveLayout } from '../layouts/layout-cache.js';
import type { RouteDeps } from './deps.js';

const OK = ok({ success: true });
/** Idempotency-Key: 1 to 64 of A-Z a-z 0-9 . _ : - */
const IDEMPOTENCY_KEY = /^[A-Za-z0-9._:-]{1,64}$/;

/** What the metrics learn of a request as it is checked. */
interface Outcome {
  type: string;
}

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
        const outcome: Outcome = { type: 'unknown' };
        const rejected = (e: unknown): never => {
          d.metrics.action(outcome.type, e instanceof AppError ? e.code : 'internal').inc();
          throw e;
        };
        let appended: Promise<void>;
        try {
          appended = accept(head, raw, outcome);
        } catch (e) {
          return rejected(e);
        }
        return appended.then(() => {
          d.metrics.action(outcome.type, 'accepted').inc();
          return OK;
        }, rejected);
      },
    },
  ];

  // The checks run synchronously when the token and the layout are cached (the common case), so an
  // accepted action costs one promise: the append's. A miss continues once the cache is filled.

  /** Checks an action and appends it; `outcome.type` learns the control type once the body is valid (for metrics). */
  function accept(head: RequestHead, raw: Buffer | null, outcome: Outcome): Promise<void> {
    const claims = d.tokens.verify(bearerToken(head.headers.authorization));
    if (claims instanceof Promise) return claims.then((c) => checkBody(head, raw, c, outcome));
    return checkBody(head, raw, claims, outcome);
  }

  function checkBody(head: RequestHead, raw: Buffer | null, claims: AudienceClaims, outcome: Outcome): Promise<void> {
    const body = parseJson(raw);
    if (!validateActionRequest(body)) throw new AppError('invalid_body', describeFirstError(validateActionRequest.errors));
    outcome.type = body.type;
    if (body.layoutId !== claims.layoutId) throw new AppError('token_layout_mismatch');
    const layout = d.layouts.get(body.layoutId);
    if (layout instanceof Promise) return layout.then((l) => append(head, body, claims, l));
    return append(head, body, claims, layout);
  }

  function append(head: RequestHead, body: ActionRequest, claims: AudienceClaims, layout: LiveLayout | null): Promise<void> {
    if (!layout || layout.teamId !== claims.team) throw new AppError('layout_not_found', undefined, 400);
    const { control, value } = checkAction(layout, body);
    const once = head.headers['idempotency-key'];
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
