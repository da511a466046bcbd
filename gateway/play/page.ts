// The audience page at /play/: a phone-sized page on the live channel's client library. Its files
// are read once at start and served with the strict Content-Security-Policy of the team page (no
// inline code, nothing from other origins; connect-src 'self' takes the same host's WebSocket).
// The client library is the compiled client/live-client.js (dist/client/ beside dist/gateway/).
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PAGE_CSP } from '../admin/page.js';
import { AppError } from '../errors.js';
import { errorReply, type Reply } from '../http/reply.js';
import type { Route } from '../http/route.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const STATIC_DIR = join(HERE, 'static');
/** The compiled client: beside the compiled gateway, or (running the sources) in dist/ after `npm run build`. */
const CLIENT = [join(HERE, '../../client/live-client.js'), join(HERE, '../../dist/client/live-client.js')].find((f) => existsSync(f));

const HEADERS = [
  ['content-security-policy', PAGE_CSP],
  ['x-frame-options', 'DENY'],
  ['x-content-type-options', 'nosniff'],
  ['referrer-policy', 'no-referrer'],
  ['cache-control', 'no-cache'],
] as const;

const JS = 'text/javascript; charset=utf-8';
const FILES: Record<string, [string, string | undefined]> = {
  '': ['text/html; charset=utf-8', join(STATIC_DIR, 'index.html')],
  'play.js': [JS, join(STATIC_DIR, 'play.js')],
  'play.css': ['text/css; charset=utf-8', join(STATIC_DIR, 'play.css')],
  'live-client.js': [JS, CLIENT],
};

export function playPageRoutes(): Route[] {
  const files = new Map<string, Reply>();
  for (const [name, [contentType, file]] of Object.entries(FILES)) {
    if (file) files.set(name, { status: 200, body: null, headers: HEADERS, raw: { contentType, data: readFileSync(file) } });
  }
  return [
    { method: 'get', pattern: '/play', handle: () => ({ status: 302, body: null, headers: [['location', '/play/']], raw: { contentType: 'text/plain', data: '' } }) },
    { method: 'get', pattern: '/play/', handle: () => files.get('')! },
    { method: 'get', pattern: '/play/:file', params: 1, handle: (head) => files.get(head.params[0] ?? '') ?? errorReply(new AppError('not_found')) },
  ];
}
