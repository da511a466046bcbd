// The crowd cues of a layout as the control plane sees them: re-arming one (audiencectl crowd rearm,
// the team page's Re-arm button) and each cue's state for the team page. The bridges decide and
// latch the cues in the same hash (bridge/cues.ts); a page switch re-arms them all (activatePage).
import type { RedisClient } from '../../runtime/redis.js';
import { cueArm, cueRecord, type CuePhase, type CueSettings, type FiredRecord, type PhaseRecord } from '../../schemas/crowd-cue.js';
import { AppError } from '../errors.js';
import type { RedisKeys } from './keys.js';
import type { LayoutStore, StoredLayout } from './layouts.js';

/** A bridge's "holding" older than this is taken as gone (the bridges rewrite it every 250 ms while it holds). */
const HOLDING_STALE_MS = 2000;

export interface CueState {
  lid: number;
  cue: CueSettings;
  phase: CuePhase;
  /** the last fired value in this arm (a vote's index; a threshold's 1 or 0), and when (ms) */
  value: number | null;
  firedAt: number | null;
  /** holding: since when the condition holds (ms) */
  holdingSince: number | null;
}

/** The controls of a layout with a cue, on any page, by lid. */
function cuedControls(layout: StoredLayout): Map<number, CueSettings> {
  const out = new Map<number, CueSettings>();
  for (const p of layout.pages) for (const c of p.controls) if (c.aggregate?.cue) out.set(c.lid, c.aggregate.cue);
  return out;
}

export class CueStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly layouts: LayoutStore,
  ) {}

  /** Re-arms one control's cue: it may fire again. Every bridge follows at its next look (every 250 ms). */
  async rearm(layoutId: string, lid: number): Promise<void> {
    const layout = await this.layouts.get(layoutId);
    if (!layout) throw new AppError('layout_not_found', `no layout ${JSON.stringify(layoutId)}`);
    if (!cuedControls(layout).has(lid)) throw new AppError('cue_not_found', `layout "${layoutId}" has no control with a crowd cue at lid ${lid}`);
    await this.redis.hincrby(this.keys.cues(layoutId), `gen:${lid}`, 1);
  }

  /** Each cue of the layout's controls (on every page) and what it is doing, as the bridges recorded it. */
  async states(layout: StoredLayout, now = Date.now()): Promise<CueState[]> {
    const controls = cuedControls(layout);
    if (controls.size === 0) return [];
    const h = await this.redis.hgetall(this.keys.cues(layout.layoutId));
    return [...controls].map(([lid, cue]) => {
      const arm = cueArm(h, lid);
      const fired = cueRecord<FiredRecord>(h, `fired:${lid}`);
      const phase = cueRecord<PhaseRecord>(h, `phase:${lid}`);
      const current = fired && fired.arm === arm ? fired : null;
      const holding = phase && phase.arm === arm && phase.phase === 'holding' && now - phase.at < HOLDING_STALE_MS ? phase.since : null;
      return {
        lid,
        cue,
        phase: holding !== null ? 'holding' : current ? 'fired' : 'armed',
        value: current?.value ?? null,
        firedAt: current?.at ?? null,
        holdingSince: holding,
      };
    });
  }
}
