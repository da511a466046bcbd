// The audience page at /play/: a phone-sized page on the live channel's client library, served with
// the pages' strict Content-Security-Policy. The client library is the compiled
// client/live-client.js (dist/client/ beside dist/gateway/).
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { staticPageRoutes } from '../http/static-page.js';
import type { Route } from '../http/route.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const STATIC_DIR = join(HERE, 'static');
/** The compiled client: beside the compiled gateway, or (running the sources) in dist/ after `npm run build`. */
const CLIENT = [join(HERE, '../../client/live-client.js'), join(HERE, '../../dist/client/live-client.js')].find((f) => existsSync(f));
const JS = 'text/javascript; charset=utf-8';

export function playPageRoutes(): Route[] {
  return staticPageRoutes('play', {
    '': ['text/html; charset=utf-8', join(STATIC_DIR, 'index.html')],
    'play.js': [JS, join(STATIC_DIR, 'play.js')],
    'play.css': ['text/css; charset=utf-8', join(STATIC_DIR, 'play.css')],
    ...(CLIENT && { 'live-client.js': [JS, CLIENT] as const }),
  });
}
