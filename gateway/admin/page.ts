// Serves the team management page's files, read once at start, with a strict Content-Security-
// Policy (no inline code, nothing from other origins) and no framing.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AppError } from '../errors.js';
import { errorReply, type Reply } from '../http/reply.js';
import type { Route } from '../http/route.js';

const STATIC_DIR = join(dirname(fileURLToPath(import.meta.url)), 'static');

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

const SECURITY_HEADERS = [
  ['content-security-policy', PAGE_CSP],
  ['x-frame-options', 'DENY'],
  ['x-content-type-options', 'nosniff'],
  ['referrer-policy', 'no-referrer'],
  ['cache-control', 'no-cache'],
] as const;

const FILES: Record<string, string> = {
  '': 'text/html; charset=utf-8',
  'admin.js': 'text/javascript; charset=utf-8',
  'admin.css': 'text/css; charset=utf-8',
  'favicon.svg': 'image/svg+xml',
};

export function adminPageRoutes(): Route[] {
  const files = new Map<string, Reply>(
    Object.entries(FILES).map(([name, contentType]) => [
      name,
      { status: 200, body: null, headers: SECURITY_HEADERS, raw: { contentType, data: readFileSync(join(STATIC_DIR, name || 'index.html')) } },
    ]),
  );
  return [
    { method: 'get', pattern: '/admin', handle: () => ({ status: 302, body: null, headers: [['location', '/admin/']], raw: { contentType: 'text/plain', data: '' } }) },
    { method: 'get', pattern: '/admin/', handle: () => files.get('')! },
    {
      method: 'get',
      pattern: '/admin/:file',
      params: 1,
      handle: (head) => files.get(head.params[0] ?? '') ?? errorReply(new AppError('not_found')),
    },
  ];
}
