// POST /token (spec 4.2): mints an audience token for a layout in the API key's scope: a new
// participant's, or with `renew` the participant of an earlier token again (same sub, zone and seat).
import { describeFirstError, validateTokenRequest } from '../../schemas/validators.js';
import { keyCoversLayout } from '../auth/api-keys.js';
import { revokedByLayout } from '../auth/token-claims.js';
import { AppError } from '../errors.js';
import { ok } from '../http/reply.js';
import { parseJson } from '../http/body.js';
import type { Route } from '../http/route.js';
import type { RouteDeps } from './deps.js';

export function tokenRoute(d: RouteDeps): Route {
  return {
    method: 'post',
    pattern: '/token',
    body: true,
    headers: ['x-api-key'],
    async handle(head, raw) {
      const key = await d.apiKeys.authenticate(head.headers['x-api-key']);
      d.mints.check(key); // every attempt of the key counts, so a refused one cannot be retried for free
      const body = parseJson(raw);
      if (!validateTokenRequest(body)) throw new AppError('invalid_body', describeFirstError(validateTokenRequest.errors));
      const layout = await d.layouts.get(body.layoutId);
      // The spec fixes 400 here; scope and existence are indistinguishable.
      if (!layout || !keyCoversLayout(key, body.layoutId, layout.teamId)) throw new AppError('layout_not_found', undefined, 400);
      if (body.zone !== undefined && !layout.zones.includes(body.zone)) {
        throw new AppError('zone_not_found', `layout "${body.layoutId}" declares ${layout.zones.length === 0 ? 'no zones' : `the zones ${layout.zones.join(', ')}`}, not ${JSON.stringify(body.zone)}`);
      }
      let minting: Promise<{ token: string; expiresAt: number }>;
      if (body.renew !== undefined) {
        const old = await d.tokens.renewable(body.renew);
        if (old.layoutId !== body.layoutId || old.team !== layout.teamId) throw new AppError('token_layout_mismatch', `The token to renew was minted for layout "${old.layoutId}", not "${body.layoutId}".`, 400);
        if (revokedByLayout(old, layout)) throw new AppError('token_revoked');
        minting = d.tokens.renew(key, old);
      } else minting = d.tokens.mint(key, body.layoutId, body.zone, body.seat);
      const { token, expiresAt } = await minting;
      // Last, so a revocation committed while this request was in flight fails it too (spec 3).
      await d.apiKeys.confirmNotRevoked(key.keyId);
      return ok({ token, expiresAt: new Date(expiresAt).toISOString() });
    },
  };
}
