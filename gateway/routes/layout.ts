// GET /layout/{layoutId} (spec 4.1): the controls on the layout's active page, for an API key whose
// scope covers the layout. Outside the scope and nonexistent look the same: 404 layout_not_found.
import { AppError } from '../errors.js';
import { keyCoversLayout } from '../auth/api-keys.js';
import { ok } from '../http/reply.js';
import type { Route } from '../http/route.js';
import type { RouteDeps } from './deps.js';

const LAYOUT_ID = /^[A-Za-z0-9_-]{1,64}$/;

export function layoutRoute(d: RouteDeps): Route {
  return {
    method: 'get',
    pattern: '/layout/:layoutId',
    params: 1,
    headers: ['x-api-key'],
    async handle(head) {
      const key = await d.apiKeys.authenticate(head.headers['x-api-key']);
      const layoutId = head.params[0] ?? '';
      const layout = LAYOUT_ID.test(layoutId) ? await d.layouts.get(layoutId) : null;
      if (!layout || !keyCoversLayout(key, layoutId, layout.teamId)) throw new AppError('layout_not_found');
      const destinationCount = await d.destinations.count(layoutId);
      // Last, so a revocation committed while this request was in flight fails it too (spec 3).
      await d.apiKeys.confirmNotRevoked(key.keyId);
      return ok({ layoutId, activePageId: layout.activePageId, controls: layout.activeControls, destinationCount, ...(layout.zones.length > 0 && { zones: layout.zones }) });
    },
  };
}
