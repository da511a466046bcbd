// The audience page at /play/: a phone-sized page on the live channel's client library, served with
// the pages' strict Content-Security-Policy. The library is the client package's own build
// (client/dist/, `npm run build`): its modules at /play/live-client.js (and beside it), and the schema modules it
// imports at /schemas/<module>.js (live-protocol.js, light.js, error-codes.js: where its relative imports lead from there); all with CORS
// for any origin, so another site's app can import the module.
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { staticFile, staticPageRoutes } from '../http/static-page.js';
import type { Reply } from '../http/reply.js';
import type { Route } from '../http/route.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const STATIC_DIR = join(HERE, 'static');
/** The client package's build: from dist/gateway/play, or from the sources' gateway/play. */
const DIST = [join(HERE, '../../../client/dist'), join(HERE, '../../client/dist')].find((d) => existsSync(join(d, 'client/live-client.js')));
const JS = 'text/javascript; charset=utf-8';

export function playPageRoutes(): Route[] {
  const page = staticPageRoutes('play', {
    '': ['text/html; charset=utf-8', join(STATIC_DIR, 'index.html')],
    'play.js': [JS, join(STATIC_DIR, 'play.js')],
    'play.css': ['text/css; charset=utf-8', join(STATIC_DIR, 'play.css')],
    // the package's modules (live-client.js and those it imports beside it)
    ...Object.fromEntries((DIST ? readdirSync(join(DIST, 'client')).filter((f) => f.endsWith('.js')) : []).map((f) => [f, [JS, join(DIST!, 'client', f), true] as const])),
  });
  return page;
}

/** The schema modules the client's build holds (at /schemas/<module>.js, where its relative imports lead), by file; none before a build. */
export function clientSchemaModules(): Map<string, Reply> {
  return new Map(DIST ? readdirSync(join(DIST, 'schemas')).filter((f) => f.endsWith('.js')).map((f) => [f, staticFile(JS, join(DIST, 'schemas', f), true)] as const) : []);
}
