// Crowd cues: a decision made of a crowd value, safe to wire straight to a show controller. A vote
// cue fires the winning option once (then it is latched until re-armed); a threshold cue fires 1 and
// 0 across a hysteresis band, each only after the value has held for `holdMs` with a quorum counted,
// so a value hovering near a threshold fires nothing more. The machine here is pure (the clock passed
// in): the bridge runs it on the merged crowd value every tick; the latch lives in Redis
// (cueStateKey) so a restarted bridge does not fire again and two bridges fire the same cue.
import type { AggregateMode, CueSettings } from './types.js';

export type { CueSettings } from './types.js';

export const CUE_MODES_THRESHOLD: readonly AggregateMode[] = ['fraction', 'mean', 'median', 'trimmed-mean', 'rate'];

/** Why a control's cue is refused for its mode (a sentence), or null. */
export function cueProblem(mode: unknown, cue: unknown): string | null {
  if (typeof cue !== 'object' || cue === null || Array.isArray(cue)) return 'aggregate cue must be an object';
  const c = cue as Record<string, unknown>;
  const has = (k: string) => c[k] !== undefined;
  if (mode === 'votes') {
    if (!has('share')) return 'a votes cue needs "share" (the winning option\'s share of the votes, above 0 and at most 1)';
    if (has('above') || has('below')) return 'a votes cue takes "share", "quorum" and "holdMs", not "above" or "below"';
    return null;
  }
  if (typeof mode === 'string' && CUE_MODES_THRESHOLD.includes(mode as AggregateMode)) {
    if (!has('above') || !has('below')) return `a ${mode} cue needs "above" and "below" (below < above: the hysteresis band)`;
    if (has('share')) return `a ${mode} cue takes "above", "below", "quorum" and "holdMs", not "share"`;
    if (typeof c.above === 'number' && typeof c.below === 'number' && !(c.below < c.above)) return `a cue's "below" (${c.below}) must be less than its "above" (${c.above})`;
    return null;
  }
  if (mode === 'centroid') return 'a centroid takes no cue';
  return null; // an unknown mode: the aggregate's own check names it
}

/** What a cue is doing, as the team page and the metrics show it. */
export type CuePhase = 'armed' | 'holding' | 'fired';

/** A merged crowd value as the machine reads it. */
export interface CueInput {
  n: number;
  value: readonly number[];
}

/** The winning option of a vote and its share of the votes, or null for no votes or a tie at the top. */
export function voteLeader(votes: readonly number[]): { index: number; share: number } | null {
  let total = 0;
  let best = -1;
  let tie = false;
  for (let i = 0; i < votes.length; i++) {
    const v = votes[i]!;
    total += v;
    if (best < 0 || v > votes[best]!) {
      best = i;
      tie = false;
    } else if (v === votes[best]) tie = true;
  }
  if (total <= 0 || tie || best < 0) return null;
  return { index: best, share: votes[best]! / total };
}

/**
 * One control's cue. `step` reads the crowd value at `now` and returns the value to fire (a vote's
 * winning index; 1 or 0 for a threshold), or null. A fired value is taken at once (`fired`), so a
 * machine never fires the same decision twice; `adopt` takes a decision another bridge (or this one
 * before a restart) stored, and `reset` re-arms.
 */
export class CueMachine {
  /** the last fired value in this arm (null: none yet), and when */
  output: number | null = null;
  firedAt: number | null = null;
  /** since when the condition for the next firing has held, and for which value */
  private holdingSince: number | null = null;
  private candidate: number | null = null;

  constructor(
    readonly mode: AggregateMode,
    public settings: CueSettings,
  ) {}

  get phase(): CuePhase {
    if (this.holdingSince !== null) return 'holding';
    return this.output === null ? 'armed' : 'fired';
  }

  /** When the condition began to hold (null: it does not). */
  get holdingFrom(): number | null {
    return this.holdingSince;
  }

  /** The value that would fire now, if it has held long enough (null: none). */
  private wanted(v: CueInput): number | null {
    const quorum = this.settings.quorum ?? 1;
    if (v.n < quorum) return null;
    if (this.mode === 'votes') {
      if (this.output !== null) return null; // latched until re-armed
      const leader = voteLeader(v.value);
      return leader && leader.share >= (this.settings.share ?? 1) ? leader.index : null;
    }
    const x = v.value[0] ?? 0;
    if (this.output === 1) return x <= this.settings.below! ? 0 : null;
    return x >= this.settings.above! ? 1 : null;
  }

  step(v: CueInput, now: number): number | null {
    const want = this.wanted(v);
    if (want === null || want !== this.candidate) {
      this.candidate = want;
      this.holdingSince = want === null ? null : now;
    }
    if (want === null || now - this.holdingSince! < (this.settings.holdMs ?? 0)) return null;
    this.fired(want, now);
    return want;
  }

  /** A firing of this arm (made here, by another bridge, or before a restart). */
  fired(value: number, at: number): void {
    this.output = value;
    this.firedAt = at;
    this.holdingSince = null;
    this.candidate = null;
  }

  /** Re-armed: nothing fired in this arm yet. */
  reset(): void {
    this.output = null;
    this.firedAt = null;
    this.holdingSince = null;
    this.candidate = null;
  }
}

/** A firing as the layout's cue hash keeps it (`fired:<lid>`), written by the bridge that made it. */
export interface FiredRecord {
  arm: string;
  seq: number;
  value: number;
  at: number;
  by: string;
}

/** What the bridges last saw a cue doing (`phase:<lid>`), written every 250 ms while it changes or holds. */
export interface PhaseRecord {
  arm: string;
  phase: CuePhase;
  since: number | null;
  at: number;
  by: string;
}

/** A cue's arm in the hash: "<page switches>.<re-arms of this lid>"; a firing counts only in its own arm. */
export function cueArm(hash: Readonly<Record<string, string>>, lid: number): string {
  return `${hash['gen:page'] ?? '0'}.${hash[`gen:${lid}`] ?? '0'}`;
}

/** A record of the hash, or null if it is missing or not JSON. */
export function cueRecord<T extends FiredRecord | PhaseRecord>(hash: Readonly<Record<string, string>>, field: `fired:${number}` | `phase:${number}`): T | null {
  const text = hash[field];
  if (text === undefined) return null;
  try {
    return JSON.parse(text) as T;
  } catch {
    return null;
  }
}

/** The cued lids of each page, as the hash keeps them (`live:<pageId>` = "4,3"): the import writes them, a page switch copies its page's to `live`. */
export function cuedLidsByPage(pages: readonly { pageId: string; controls: readonly { lid: number; aggregate?: { cue?: unknown } }[] }[]): Record<string, string> {
  return Object.fromEntries(pages.map((p) => [p.pageId, p.controls.filter((c) => c.aggregate?.cue !== undefined).map((c) => c.lid).join(',')]));
}
