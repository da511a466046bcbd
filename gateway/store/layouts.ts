// Layouts in Redis: one hash per layout ({layoutId}-tagged, the record) plus each team's set of
// layoutIds ({teamId}-tagged, an index). Listings skip an index entry whose layout is gone or belongs
// to another team.
import type { RedisClient } from '../../runtime/redis.js';
import { cuedLidsByPage } from '../../schemas/crowd-cue.js';
import type { LayoutDefinition, LayoutLimits, Page } from '../../schemas/types.js';
import { AppError } from '../errors.js';
import { checkLayoutDefinition } from '../layouts/check-definition.js';
import { publishInvalidation } from './invalidation.js';
import type { RedisKeys } from './keys.js';
import { throwIfRefused } from './script-replies.js';
import { runScript } from './scripts.js';
import type { RecordBounds } from './show-record.js';
import { RECORD_DEFAULTS } from '../../schemas/show-record.js';
import { lightCanvas, type LightCanvas, type LightCanvasDefinition } from '../../schemas/light.js';

/**
 * A revoked (or muted) participant is remembered this long: the longest an audience token can live
 * (TOKEN_TTL_SECONDS, at most 30 days) and then still be renewed (TOKEN_RENEW_GRACE_SECONDS, at
 * most 30 days), so no token of the participant can outlive the record and renew itself back.
 */
export const PARTICIPANT_MEMORY_MS = 2 * 30 * 24 * 3600 * 1000;

export interface StoredLayout {
  layoutId: string;
  teamId: string;
  name: string;
  activePageId: string;
  pages: Page[];
  /** the layout's own per-participant rates, if it sets any */
  limits?: LayoutLimits;
  /** parts of the room (POST /token `zone`); empty for none */
  zones: readonly string[];
  /** the light canvas, its defaults filled in; null for none */
  light: LightCanvas | null;
  /** audience tokens minted before this time (ms) are revoked; 0 for none */
  tokensRevokedBefore: number;
  /** participants (subs) whose tokens are revoked */
  revokedSubs: ReadonlySet<string>;
  /** participants (subs) whose Strings are refused, and until when (ms) */
  mutedSubs: ReadonlyMap<string, number>;
  updatedAt: number;
  /** Incremented on every write; caches compare it to notice a change. */
  version: number;
}

export class LayoutStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly record: RecordBounds = RECORD_DEFAULTS,
  ) {}

  async get(layoutId: string): Promise<StoredLayout | null> {
    const [h, revoked, muted] = await Promise.all([
      this.redis.hgetall(this.keys.layout(layoutId)),
      this.redis.hkeys(this.keys.revokedSubs(layoutId)),
      this.redis.hgetall(this.keys.mutedSubs(layoutId)),
    ]);
    if (!h.team || !h.pages || !h.activePageId) return null;
    const zones = h.zones ? (JSON.parse(h.zones) as string[]) : [];
    return {
      layoutId,
      teamId: h.team,
      name: h.name ?? layoutId,
      activePageId: h.activePageId,
      pages: JSON.parse(h.pages) as Page[],
      ...(h.limits && { limits: JSON.parse(h.limits) as LayoutLimits }),
      zones,
      light: h.light ? lightCanvas(JSON.parse(h.light) as LightCanvasDefinition, zones) : null,
      tokensRevokedBefore: Number(h.tokensRevokedBefore ?? 0),
      revokedSubs: new Set(revoked),
      mutedSubs: new Map(Object.entries(muted).map(([sub, until]) => [sub, Number(until)])),
      updatedAt: Number(h.updatedAt ?? 0),
      version: Number(h.version ?? 0),
    };
  }

  /** The layout's version, or null if it does not exist (cheap: used by the periodic cache re-check). */
  async version(layoutId: string): Promise<number | null> {
    const v = await this.redis.hget(this.keys.layout(layoutId), 'version');
    return v === null ? null : Number(v);
  }

  /** The layout if it belongs to the team; layout_not_found otherwise (another team's layout is indistinguishable from none). */
  async requireOwned(teamId: string, layoutId: string): Promise<StoredLayout> {
    const layout = await this.get(layoutId);
    if (!layout || layout.teamId !== teamId) throw new AppError('layout_not_found', `no layout ${JSON.stringify(layoutId)} in this team`);
    return layout;
  }

  /**
   * Creates or replaces a layout of the team; refuses a layoutId another team owns. The layout's
   * hash first (one script on {layoutId}: the owner check and the write together), then the team's
   * index (on {teamId}). A crash between them leaves a working layout that `layout list` does not
   * show until the import is run again; nothing half-made.
   */
  async import(teamId: string, input: unknown, now = Date.now()): Promise<{ layoutId: string; replaced: boolean }> {
    const def: LayoutDefinition = checkLayoutDefinition(input);
    const r = await runScript(this.redis, 'importLayout', [this.keys.layout(def.layoutId), this.keys.cues(def.layoutId)], [
      teamId,
      def.name,
      def.activePageId,
      JSON.stringify(def.pages),
      now,
      def.limits ? JSON.stringify(def.limits) : '',
      def.zones && def.zones.length > 0 ? JSON.stringify(def.zones) : '',
      JSON.stringify(cuedLidsByPage(def.pages)),
      def.light ? JSON.stringify(def.light) : '',
    ]);
    throwIfRefused('importLayout', Number(r), `layoutId "${def.layoutId}" belongs to another team`);
    await this.redis.sadd(this.keys.teamLayouts(teamId), def.layoutId);
    await publishInvalidation(this.redis, this.keys, { kind: 'layout', id: def.layoutId });
    return { layoutId: def.layoutId, replaced: r === 2 };
  }

  async listByTeam(teamId: string): Promise<StoredLayout[]> {
    const ids = (await this.redis.smembers(this.keys.teamLayouts(teamId))).sort();
    const layouts = await Promise.all(ids.map((id) => this.get(id)));
    return layouts.filter((l): l is StoredLayout => l !== null && l.teamId === teamId);
  }

  /**
   * Revokes the layout's audience tokens minted before `before` (ms; a later cut-off replaces an
   * earlier one, never the reverse), or those of one participant (`sub`). Every gateway answers 401
   * token_revoked to them once it hears the invalidation message (milliseconds), at the latest at
   * its next re-check. Tokens minted after the cut-off keep working. Returns the cut-off in force,
   * or when the participant was revoked.
   */
  async revokeTokens(layoutId: string, what: { before: number } | { sub: string }, now = Date.now()): Promise<number> {
    const [kind, value] = 'sub' in what ? ['sub', what.sub] : ['before', String(Math.floor(what.before))];
    const r = (await runScript(this.redis, 'revokeTokens', [this.keys.layout(layoutId), this.keys.revokedSubs(layoutId)], [kind, value, now, PARTICIPANT_MEMORY_MS])) as [number, string?];
    throwIfRefused('revokeTokens', Number(r[0]), `no layout ${JSON.stringify(layoutId)}`);
    await publishInvalidation(this.redis, this.keys, { kind: 'layout', id: layoutId });
    return Number(r[1]);
  }

  /**
   * Switches the active page and re-arms the layout's crowd cues, and records the switch with the
   * crowd values of the page left (one script on the layout's hash slot); every gateway learns it
   * through the invalidation channel, every bridge at its next look at the cues (every 250 ms).
   * `by`: who switched, as the show record says it (`admin:<email>`, `cli:<user>@<host>`).
   */
  async activate(layoutId: string, pageId: string, by = 'unknown', now = Date.now()): Promise<void> {
    const rec = this.keys.showRecord(layoutId);
    const r = await runScript(this.redis, 'activatePage', [this.keys.layout(layoutId), this.keys.cues(layoutId), rec.stream, rec.state], [pageId, now, by, this.record.retentionMs, this.record.maxBytes]);
    throwIfRefused('activatePage', Number(r), Number(r) === 0 ? `no layout ${JSON.stringify(layoutId)}` : `layout "${layoutId}" has no page ${JSON.stringify(pageId)}`);
    await publishInvalidation(this.redis, this.keys, { kind: 'layout', id: layoutId });
  }
}
