// POST /action (spec 4.3), the hot path: a cached token check, an in-memory layout lookup, pure value
// checks, then one XADD; 200 only after Redis acknowledged it. OPTIONS answers CORS preflight.
import { randomUUID } from 'node:crypto';
import { describeFirstError, validateActionRequest } from '../../schemas/validators.js';
import { checkAction } from '../actions/check-action.js';
import { AppError } from '../errors.js';
import { ok } from '../http/reply.js';
import { parseJson, type RequestHead, type Route } from '../http/server.js';
import type { RouteDeps } from './deps.js';

const SUCCESS = { success: true } as const;

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
      headers: ['authorization', 'origin'],
      replyHeaders,
      async handle(head, raw) {
        let type = 'unknown';
        try {
          await accept(head, raw, (t) => (type = t));
          d.metrics.action(type, 'accepted').inc();
          return ok(SUCCESS);
        } catch (e) {
          d.metrics.action(type, e instanceof AppError ? e.code : 'internal').inc();
          throw e;
        }
      },
    },
  ];

  /** Checks an action and appends it; `typed` learns the control type once the body is valid (for metrics). */
  async function accept(head: RequestHead, raw: Buffer | null, typed: (type: string) => void): Promise<void> {
        const claims = await d.tokens.verify(bearerToken(head.headers.authorization));
        const body = parseJson(raw);
        if (!validateActionRequest(body)) throw new AppError('invalid_body', describeFirstError(validateActionRequest.errors));
        typed(body.type);
        if (body.layoutId !== claims.layoutId) throw new AppError('token_layout_mismatch');
        const layout = await d.layouts.get(body.layoutId);
        if (!layout || layout.teamId !== claims.team) throw new AppError('layout_not_found', undefined, 400);
        const { control, value } = checkAction(layout, body);
        await d.actions.append({
          v: 1,
          id: randomUUID(),
          layoutId: layout.layoutId,
          lid: control.lid,
          address: control.address,
          type: control.type,
          value,
          ts: head.receivedAt,
        });
  }
}
