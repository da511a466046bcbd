// A browser page's files, read once at start and served under `/<base>/` with a strict
// Content-Security-Policy (no inline code, nothing from other origins; connect-src 'self' takes the
// same host's WebSocket too) and no framing: the team page and the audience page.
import { readFileSync } from 'node:fs';
import { AppError } from '../errors.js';
import { errorReply, type Reply } from './reply.js';
import type { Route } from './route.js';

export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

const PAGE_HEADERS = [
  ['content-security-policy', PAGE_CSP],
  ['x-frame-options', 'DENY'],
  ['x-content-type-options', 'nosniff'],
  ['referrer-policy', 'no-referrer'],
  ['cache-control', 'no-cache'],
] as const;

/** What any origin may load (an ES module another site's app imports): the page's headers and CORS for every origin. */
const SHARED_HEADERS = [...PAGE_HEADERS, ['access-control-allow-origin', '*']] as const;

/** A file served as it is, with the pages' headers (and CORS for any origin when `shared`). */
export function staticFile(contentType: string, path: string, shared = false): Reply {
  return { status: 200, body: null, headers: shared ? SHARED_HEADERS : PAGE_HEADERS, raw: { contentType, data: readFileSync(path) } };
}

/**
 * `/<base>` redirects to `/<base>/` (the file named ''), and `/<base>/<name>` serves each file:
 * [content type, path], and `true` for a file any origin may load (CORS).
 */
export function staticPageRoutes(base: string, files: Record<string, readonly [contentType: string, path: string, shared?: boolean]>): Route[] {
  const replies = new Map<string, Reply>(Object.entries(files).map(([name, [contentType, path, shared]]) => [name, staticFile(contentType, path, shared)]));
  return [
    { method: 'get', pattern: `/${base}`, handle: () => ({ status: 302, body: null, headers: [['location', `/${base}/`]], raw: { contentType: 'text/plain', data: '' } }) },
    { method: 'get', pattern: `/${base}/`, handle: () => replies.get('')! },
    { method: 'get', pattern: `/${base}/:file`, params: 1, handle: (head) => replies.get(head.params[0] ?? '') ?? errorReply(new AppError('not_found')) },
  ];
}
