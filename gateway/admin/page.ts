// The team management page's files (static/), served under /admin/ with the pages' strict
// Content-Security-Policy.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { staticPageRoutes } from '../http/static-page.js';
import type { Route } from '../http/route.js';

const STATIC_DIR = join(dirname(fileURLToPath(import.meta.url)), 'static');

export function adminPageRoutes(): Route[] {
  return staticPageRoutes('admin', {
    '': ['text/html; charset=utf-8', join(STATIC_DIR, 'index.html')],
    'admin.js': ['text/javascript; charset=utf-8', join(STATIC_DIR, 'admin.js')],
    'crowd-view.js': ['text/javascript; charset=utf-8', join(STATIC_DIR, 'crowd-view.js')],
    'moderation.js': ['text/javascript; charset=utf-8', join(STATIC_DIR, 'moderation.js')],
    'light-panel.js': ['text/javascript; charset=utf-8', join(STATIC_DIR, 'light-panel.js')],
    'latest-read.js': ['text/javascript; charset=utf-8', join(STATIC_DIR, 'latest-read.js')],
    'admin.css': ['text/css; charset=utf-8', join(STATIC_DIR, 'admin.css')],
    'favicon.svg': ['image/svg+xml', join(STATIC_DIR, 'favicon.svg')],
  });
}
