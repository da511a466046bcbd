// CORS for POST /action only. Audience web apps call it from their own origin with a bearer token,
// so any origin is allowed by default (the token is the authorisation); CORS_ORIGINS narrows it.
// The API-key routes send no CORS headers at all, so a browser page cannot call them cross-origin
// and an API key has no reason to ever sit in client code.
import { AppError } from '../errors.js';
import { errorReply, headerBytes, type Header, type Reply } from './reply.js';

type Headers = readonly Header[];

export class CorsPolicy {
  private readonly any: boolean;
  private readonly allowed: ReadonlySet<string>;

  /** `'*'` or a comma-separated list of exact origins (scheme://host[:port]). */
  constructor(spec: string) {
    this.any = spec.trim() === '*';
    this.allowed = new Set(this.any ? [] : spec.split(',').map((o) => o.trim().replace(/\/$/, '')).filter(Boolean));
  }

  private static readonly ANY = headerBytes([
    ['access-control-allow-origin', '*'],
    ['access-control-expose-headers', 'x-request-id, retry-after'],
  ]);
  private static readonly VARY = headerBytes([['vary', 'Origin']]);

  allows(origin: string): boolean {
    return this.any || this.allowed.has(origin);
  }

  /** Headers for an actual (non-preflight) response. */
  replyHeaders(origin: string): Headers {
    if (this.any) return CorsPolicy.ANY;
    if (!origin || !this.allowed.has(origin)) return CorsPolicy.VARY;
    return [
      ['access-control-allow-origin', origin],
      ['access-control-expose-headers', 'x-request-id, retry-after'],
      ['vary', 'Origin'],
    ];
  }

  /** The answer to OPTIONS: 204 with the allowed method and headers, or 403 origin_not_allowed. */
  preflight(origin: string): Reply {
    if (origin && !this.allows(origin)) return errorReply(new AppError('origin_not_allowed'));
    return {
      status: 204,
      body: null,
      headers: [
        ['access-control-allow-methods', 'POST, OPTIONS'],
        ['access-control-allow-headers', 'authorization, content-type, x-request-id, idempotency-key'],
        ['access-control-max-age', '600'],
      ],
    };
  }
}
