// The admin JSON API (used by the page and by scripts): sign-in, keys, layouts. Every reply is
// Cache-Control: no-store; an administrator sees and touches only their own team, and another
// team's keyId or layoutId answers 404 as if it did not exist.
import { describeAggregate } from '../../schemas/aggregate.js';
import { describeFirstError, validateAdminActivate, validateAdminCreateKey, validateAdminLogin, validateAdminRevokeTokens } from '../../schemas/validators.js';
import { AppError, orUnavailable } from '../errors.js';
import type { Reply } from '../http/reply.js';
import { parseJson } from '../http/body.js';
import type { RequestHead, Route } from '../http/route.js';
import type { DestinationCounts } from '../layouts/destinations.js';
import type { CrowdValue } from '../../schemas/crowd-merge.js';
import type { Stores } from '../store/stores.js';
import type { AdminGuard } from './guard.js';
import type { LoginLimiter } from './login-limiter.js';
import { verifyPassword } from './passwords.js';
import type { SessionStore } from './sessions.js';

export interface AdminDeps {
  stores: Stores;
  sessions: SessionStore;
  guard: AdminGuard;
  limiter: LoginLimiter;
  destinations: DestinationCounts;
  /** the crowd's merged values of a layout (listened to while the team page looks) */
  crowd: { peek(layoutId: string): CrowdValue[] };
  /** a hash checked for unknown emails, so they take as long as known ones */
  dummyPasswordHash: string;
  /** the gateway's clock (Redis's): what tokens' iat and the bridge's cue times are in */
  now: () => number;
}

const NO_STORE = [['cache-control', 'no-store']] as const;
export const json = (body: unknown, extra: readonly (readonly [string, string])[] = []): Reply => ({ status: 200, body, headers: extra });

function parseBody<T>(raw: Buffer | null, validate: ((v: unknown) => v is T) & { errors?: Parameters<typeof describeFirstError>[0] }): T {
  const body = parseJson(raw);
  if (!validate(body)) throw new AppError('invalid_body', describeFirstError(validate.errors));
  return body;
}

/** What the guard reads: the session cookie, the CSRF token, Origin against Host, the proxy's forwarding. */
const ADMIN_HEADERS = ['cookie', 'x-csrf-token', 'origin', 'host', 'x-forwarded-proto', 'x-forwarded-for'] as const;

/** An admin route: reads the guard's headers; every reply, errors included, carries no-store. */
export function api(route: Omit<Route, 'replyHeaders' | 'headers'>): Route {
  return { ...route, headers: ADMIN_HEADERS, replyHeaders: () => NO_STORE };
}

/**
 * The session's team's layout named first in the path (404 layout_not_found for another team's),
 * and the session; `write` checks the CSRF token too.
 */
export async function teamLayout(d: AdminDeps, head: RequestHead, write: boolean) {
  const { session } = await d.guard.require(head, write);
  const layout = await orUnavailable(d.stores.layouts.requireOwned(session.teamId, head.params[0] ?? ''));
  return { layout, session };
}

export function adminApiRoutes(d: AdminDeps): Route[] {
  const sessionBody = async (teamId: string, email: string, csrfToken: string) => {
    const team = await orUnavailable(d.stores.teams.get(teamId));
    return { email, teamId, teamName: team?.name ?? teamId, csrfToken };
  };
  const ownedKey = async (teamId: string, keyId: string) => {
    const key = /^ak_[0-9a-f]{16}$/.test(keyId) ? await orUnavailable(d.stores.apiKeys.get(keyId)) : null;
    if (!key || key.teamId !== teamId) throw new AppError('key_not_found');
    return key;
  };
  const owned = (head: RequestHead) => head.params[0] ?? '';
  const ownedLayout = async (head: RequestHead, write: boolean) => (await teamLayout(d, head, write)).layout;

  return [
    api({
      method: 'post',
      pattern: '/admin/api/login',
      body: true,
      remoteAddress: true,
      async handle(head, raw) {
        d.guard.checkOrigin(head);
        const { email, password } = parseBody(raw, validateAdminLogin);
        const account = email.trim().toLowerCase();
        const address = d.guard.clientAddress(head);
        await orUnavailable(d.limiter.reserve(account, address));
        let admin: Awaited<ReturnType<typeof d.stores.admins.get>>;
        let ok: boolean;
        try {
          admin = await orUnavailable(d.stores.admins.get(email));
          ok = await verifyPassword(password, admin?.passwordHash ?? d.dummyPasswordHash);
        } finally {
          d.limiter.release();
        }
        if (!ok || !admin) throw new AppError('login_failed'); // the attempt was counted when reserved
        await orUnavailable(d.limiter.succeed(account, address));
        const { sessionId, session } = await orUnavailable(d.sessions.create(admin.email, admin.teamId));
        return json(await sessionBody(admin.teamId, admin.email, session.csrfToken), d.guard.setCookies(head, sessionId));
      },
    }),
    api({
      method: 'post',
      pattern: '/admin/api/logout',
      async handle(head) {
        const { session, sessionId } = await d.guard.require(head, true);
        await orUnavailable(d.sessions.destroy(sessionId, session.email));
        return json({ success: true }, d.guard.clearCookies(head));
      },
    }),
    api({
      method: 'get',
      pattern: '/admin/api/session',
      async handle(head) {
        const { session } = await d.guard.require(head, false);
        return json(await sessionBody(session.teamId, session.email, session.csrfToken));
      },
    }),
    api({
      method: 'get',
      pattern: '/admin/api/keys',
      async handle(head) {
        const { session } = await d.guard.require(head, false);
        return json({ keys: await orUnavailable(d.stores.apiKeys.listByTeam(session.teamId)) });
      },
    }),
    api({
      method: 'post',
      pattern: '/admin/api/keys',
      body: true,
      async handle(head, raw) {
        const { session } = await d.guard.require(head, true);
        const body = parseBody(raw, validateAdminCreateKey);
        const created = await orUnavailable(d.stores.apiKeys.create(session.teamId, {
            ...(body.name !== undefined && { name: body.name }),
            ...(body.layouts && { layouts: body.layouts }),
            ...(body.mintRate !== undefined && { mintRate: body.mintRate }),
            ...(body.mintBurst !== undefined && { mintBurst: body.mintBurst }),
          }),
        );
        // The only time the secret is shown.
        return json({ keyId: created.keyId, apiKey: created.apiKey, key: created.info });
      },
    }),
    api({
      method: 'post',
      pattern: '/admin/api/keys/:keyId/revoke',
      params: 1,
      async handle(head) {
        const { session } = await d.guard.require(head, true);
        const key = await ownedKey(session.teamId, owned(head));
        const revoked = await orUnavailable(d.stores.apiKeys.revoke(key.keyId));
        return json({ keyId: key.keyId, revokedAt: revoked.revokedAt });
      },
    }),
    api({
      method: 'get',
      pattern: '/admin/api/layouts',
      async handle(head) {
        const { session } = await d.guard.require(head, false);
        const layouts = await orUnavailable(d.stores.layouts.listByTeam(session.teamId));
        return json({
          layouts: await Promise.all(
            layouts.map(async (l) => ({
              layoutId: l.layoutId,
              name: l.name,
              activePageId: l.activePageId,
              pages: l.pages.map((p) => ({
                pageId: p.pageId,
                name: p.name,
                controls: p.controls.map((c) => ({ lid: c.lid, label: c.props.label, type: c.type, address: c.address, ...(c.options && { options: c.options }), ...(c.aggregate && { aggregate: c.aggregate, crowd: describeAggregate(c.aggregate) }), ...(c.moderation && { moderation: c.moderation }) })),
              })),
              ...(l.zones.length > 0 && { zones: l.zones }),
              ...(l.light && { light: l.light }),
              ...(await d.destinations.both(l.layoutId, false).then((x) => ({ destinationCount: x.count, displaysReachable: x.reachable }))),
              ...(l.tokensRevokedBefore > 0 && { tokensRevokedBefore: new Date(l.tokensRevokedBefore).toISOString() }),
            })),
          ),
        });
      },
    }),
    api({
      method: 'put',
      pattern: '/admin/api/layouts/:layoutId',
      params: 1,
      body: true,
      maxBodyBytes: 1024 * 1024,
      async handle(head, raw) {
        const { session } = await d.guard.require(head, true);
        const def = parseJson(raw);
        if (typeof def === 'object' && def !== null && (def as { layoutId?: unknown }).layoutId !== owned(head)) {
          throw new AppError('invalid_layout', 'the layoutId in the body must be the one in the URL');
        }
        // layoutIds are global: one another team owns is refused (409), as from audiencectl
        return json(await orUnavailable(d.stores.layouts.import(session.teamId, def)));
      },
    }),
    api({
      method: 'post',
      pattern: '/admin/api/layouts/:layoutId/activate',
      params: 1,
      body: true,
      async handle(head, raw) {
        const { session } = await d.guard.require(head, true);
        const layout = await orUnavailable(d.stores.layouts.requireOwned(session.teamId, owned(head)));
        const { pageId } = parseBody(raw, validateAdminActivate);
        await orUnavailable(d.stores.layouts.activate(layout.layoutId, pageId, `admin:${session.email}`));
        return json({ layoutId: layout.layoutId, activePageId: pageId });
      },
    }),
    api({
      method: 'get',
      pattern: '/admin/api/layouts/:layoutId/crowd',
      params: 1,
      async handle(head) {
        const layout = await ownedLayout(head, false);
        const now = d.now();
        const cues = new Map((await orUnavailable(d.stores.cues.states(layout, now))).map((c) => [c.lid, c]));
        const values = new Map(d.crowd.peek(layout.layoutId).map((v) => [v.lid, v]));
        const page = layout.pages.find((p) => p.pageId === layout.activePageId);
        const controls = (page?.controls ?? [])
          .filter((c) => c.aggregate)
          .map((c) => {
            const v = values.get(c.lid);
            const cue = cues.get(c.lid);
            return {
              lid: c.lid,
              label: c.props.label,
              type: c.type,
              mode: c.aggregate!.mode,
              ...(c.options && { options: c.options.map((o) => o.label) }),
              value: v?.value ?? null,
              n: v?.n ?? 0,
              ...(v?.sd !== undefined && { sd: v.sd }),
              zones: v?.zones ?? {},
              ...(cue && { cue: { ...cue.cue, phase: cue.phase, value: cue.value, firedAt: cue.firedAt && new Date(cue.firedAt).toISOString(), holdingSince: cue.holdingSince && new Date(cue.holdingSince).toISOString() } }),
            };
          });
        return json({ layoutId: layout.layoutId, activePageId: layout.activePageId, zones: layout.zones, at: new Date(now).toISOString(), controls });
      },
    }),
    api({
      method: 'post',
      pattern: '/admin/api/layouts/:layoutId/crowd/:lid/rearm',
      params: 2,
      async handle(head) {
        const layout = await ownedLayout(head, true);
        const lidText = head.params[1] ?? '';
        if (!/^\d{1,10}$/.test(lidText)) throw new AppError('cue_not_found', `no control with a crowd cue at lid ${JSON.stringify(lidText)}`);
        await orUnavailable(d.stores.cues.rearm(layout.layoutId, Number(lidText)));
        return json({ layoutId: layout.layoutId, lid: Number(lidText), rearmed: true });
      },
    }),
    api({
      method: 'post',
      pattern: '/admin/api/layouts/:layoutId/revoke-tokens',
      params: 1,
      body: true,
      async handle(head, raw) {
        const layout = await ownedLayout(head, true);
        const body = parseBody(raw, validateAdminRevokeTokens);
        const before = body.before === undefined ? d.now() : Date.parse(body.before);
        if (!Number.isFinite(before)) throw new AppError('invalid_body', 'before must be an ISO 8601 time');
        const cut = await orUnavailable(d.stores.layouts.revokeTokens(layout.layoutId, { before }));
        return json({ layoutId: layout.layoutId, revokedBefore: new Date(cut).toISOString() });
      },
    }),
  ];
}
