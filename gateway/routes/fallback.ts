// Anything no route matched: 405 on a known path with another method, 404 elsewhere.
import { AppError } from '../errors.js';
import { errorReply } from '../http/reply.js';
import type { Route } from '../http/route.js';

export function fallbackRoutes(known: { pattern: string; allow: string }[]): Route[] {
  return [
    ...known.map(
      (k): Route => ({
        method: 'any',
        pattern: k.pattern,
        handle: () => errorReply(new AppError('method_not_allowed'), [['allow', k.allow]]),
      }),
    ),
    { method: 'any', pattern: '/*', handle: () => errorReply(new AppError('not_found')) },
  ];
}
