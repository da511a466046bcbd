// Layouts in memory, so /action and /layout need no Redis read once a layout is warm. An entry is
// dropped when the invalidation channel names its layout, and re-checked against the layout's
// version every few seconds in case a message was missed. Misses are cached too (bounded, forgotten
// on the layout's invalidation message and at every re-check), so asking for a missing layout costs
// what asking for another team's costs: nothing tells them apart, not even the time.
import { LRUCache } from 'lru-cache';
import type { Control } from '../../schemas/types.js';
import { orUnavailable } from '../errors.js';
import type { LayoutStore, StoredLayout } from '../store/layouts.js';
import { untimed, type RedisTimer } from '../store/redis.js';

/** A stored layout, with its active page's controls ready for the hot path. */
export interface LiveLayout extends StoredLayout {
  /** The active page's controls by lid. */
  controls: ReadonlyMap<number, Control>;
  /** The controls array of the active page, as discovery returns it (a moderation policy shows only its mode and length). */
  activeControls: readonly Control[];
}

/** What discovery and the page frame show of a control's policy: its mode and length, never its lists. */
export function publicControl(control: Control): Control {
  if (!control.moderation) return control;
  const { moderation, ...rest } = control;
  return { ...rest, moderation: { mode: moderation.mode, ...(moderation.maxLength !== undefined && { maxLength: moderation.maxLength }) } };
}

function toLive(s: StoredLayout): LiveLayout {
  const active = s.pages.find((p) => p.pageId === s.activePageId);
  const controls = active?.controls ?? [];
  return { ...s, controls: new Map(controls.map((c) => [c.lid, c])), activeControls: controls.map(publicControl) };
}

export class LayoutCache {
  private readonly entries = new Map<string, LiveLayout>();
  /** layoutIds known not to exist (LRU: random ids cannot grow it without bound) */
  private readonly misses = new LRUCache<string, true>({ max: 10_000 });
  private readonly loading = new Map<string, Promise<LiveLayout | null>>();
  /** Bumped by every invalidation, so a load that started before one is not cached after it. */
  private epoch = 0;

  constructor(
    private readonly store: LayoutStore,
    private readonly timed: RedisTimer = untimed,
  ) {}

  /** The layout, from memory or Redis; null if it does not exist. Redis failures become `unavailable`. */
  get(layoutId: string): Promise<LiveLayout | null> | LiveLayout | null {
    const hit = this.entries.get(layoutId);
    if (hit) return hit;
    if (this.misses.has(layoutId)) return null;
    let pending = this.loading.get(layoutId);
    if (!pending) {
      pending = this.load(layoutId);
      this.loading.set(layoutId, pending);
    }
    return pending;
  }

  private async load(layoutId: string): Promise<LiveLayout | null> {
    const epoch = this.epoch;
    try {
      const stored = await orUnavailable(this.timed('layout_load', this.store.get(layoutId)));
      const live = stored ? toLive(stored) : null;
      if (epoch === this.epoch) {
        if (live) this.entries.set(layoutId, live);
        else this.misses.set(layoutId, true);
      }
      return live;
    } finally {
      this.loading.delete(layoutId);
    }
  }

  invalidate(layoutId: string): void {
    this.epoch++;
    this.entries.delete(layoutId);
    this.misses.delete(layoutId);
    this.loading.delete(layoutId);
  }

  /** Drops every cached layout whose version in Redis differs (or that is gone). */
  async recheck(): Promise<void> {
    this.misses.clear(); // a missed import message cannot hide a layout longer than one re-check
    const ids = [...this.entries.keys()];
    const versions = await Promise.all(ids.map((id) => this.store.version(id)));
    ids.forEach((id, i) => {
      if (versions[i] !== this.entries.get(id)?.version) this.invalidate(id);
    });
  }
}
