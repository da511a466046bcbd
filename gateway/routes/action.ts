// POST /action (spec 4.3), the hot path: a cached token check, an in-memory layout lookup, then the
// intake (gateway/actions/intake.ts: budget, pure value checks, the append by group commit); 200
// only after Redis acknowledged it. OPTIONS answers CORS preflight.
import { WHOLE_DOCUMENT, describeFirstError, validateActionRequest } from '../../schemas/validators.js';
import { CONTROL_TYPES } from '../../schemas/types.js';
import type { ActionIntake, IntakeWaiter } from '../actions/intake.js';
import type { AudienceClaims } from '../auth/token-claims.js';
import { AppError } from '../errors.js';
import { ok, prepared } from '../http/reply.js';
import { parseJson } from '../http/body.js';
import { LATER, type RequestHead, type Responder, type Route } from '../http/route.js';
import type { CounterSeries } from '../hot-path-metrics.js';
import type { GatewayMetrics } from '../metrics.js';
import type { RouteDeps } from './deps.js';

const OK = prepared(ok({ success: true }));
const HELD = prepared(ok({ success: true, held: true }));

/** The token of `Authorization: Bearer <token>`, or token_missing. */
export function bearerToken(header: string): string {
  if (header.length > 7 && header.slice(0, 7).toLowerCase() === 'bearer ') {
    const token = header.slice(7).trim();
    if (token) return token;
  }
  throw new AppError('token_missing');
}

/** POST /action and its preflight; `intake` is the process's one action intake, which the live channel shares. */
export function actionRoutes(d: RouteDeps, intake: ActionIntake): Route[] {
  const replyHeaders: Route['replyHeaders'] = (head) => d.cors.replyHeaders(head.headers.origin);
  const untyped = new Outcomes(d.metrics, 'unknown');
  const byType = new Map(CONTROL_TYPES.map((t) => [t, new Outcomes(d.metrics, t)]));
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
      const once = head.headers['idempotency-key']; // '' when absent (uWS reads an empty header as absent too)
      intake.accept(body, claims, once, head.receivedAt, answer);
    } catch (e) {
      answer.failed(e);
    }
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
class Answer implements IntakeWaiter {
  constructor(
    readonly head: RequestHead,
    private readonly respond: Responder,
    private readonly outcomes: Outcomes,
  ) {}

  stored(): void {
    this.outcomes.accepted();
    this.respond.reply(OK);
  }

  held(settled: Promise<void>): void {
    settled.then(
      () => {
        this.outcomes.accepted();
        this.respond.reply(HELD);
      },
      (e: unknown) => this.failed(e),
    );
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
