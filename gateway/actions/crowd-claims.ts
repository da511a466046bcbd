// One participant, one count, across gateway processes. A participant's crowd values are counted by
// the process that last claimed it. A process claims a participant at its first aggregated action
// there (claimCrowd-2.lua: one SET ... GET of the participant's owner key, numbered by the layout's
// claim counter) and again at an action once its claim is CLAIM_REFRESH_MS old, so the owner key
// outlives every window the participant is held in. When the claim took the participant from
// another process, Redis publishes the move on that process's own sharded channel for the layout:
// it takes the participant out of every window of the layout (its next fold tick says so to the
// bridge) and publishes what it held on the new process's channel, which counts those values with
// the times they came, except where the participant has acted here since. So Redis works per join
// and per move (and per active participant every CLAIM_REFRESH_MS), never per action, and each
// message reaches the one process it is for.
// A process listens to its channel of a layout while it holds participants of it, and has
// subscribed before its first claim there. Its subscriber coming back from a lost connection may
// have missed moves: it then reads the owner of every participant it holds and lets go of those
// another process claimed meanwhile.
import type { RedisClient } from '../../runtime/redis.js';
import { WINDOW_MS_MAX } from '../../schemas/aggregate.js';
import { runScript } from '../store/scripts.js';
import type { RedisKeys } from '../store/keys.js';
import type { AggregatedControl, HandedValue } from './crowd-fold.js';

/** A participant's claim is made again at its next action once it is this old (ms). */
export const CLAIM_REFRESH_MS = 5 * 60_000;
/**
 * How long a claim lasts in Redis: the longest window after the last action it may be made again
 * at, so the owner key is there as long as any process may hold the participant.
 */
export const CLAIM_TTL_MS = CLAIM_REFRESH_MS + WINDOW_MS_MAX + 60_000;
/** A participant not seen for this long is in no window here any more, and its claim is forgotten. */
const FORGET_AFTER_MS = WINDOW_MS_MAX + 10_000;
const SWEEP_MS = 10_000;
/** Owners read at once after a lost subscription. */
const RECHECK_BATCH = 500;

/** What the fold does for the claims: let a participant go, and count what another process held. */
export interface CrowdHolder {
  release(layoutId: string, sub: string): HandedValue[];
  adopt(layoutId: string, sub: string, handed: readonly HandedValue[], controlOf: (lid: number) => AggregatedControl | undefined): void;
}

export interface CrowdClaimsOptions {
  /** an aggregated control of the layout's cached definition, by lid (a hand-over names its controls by lid) */
  controlOf: (layoutId: string, lid: number) => AggregatedControl | undefined;
  /** a claim, subscription or hand-over that Redis refused or did not answer: counted */
  onUnavailable: (what: string) => void;
  now: () => number;
}

interface Claim {
  /** the claim's number in the layout (0: not yet made) */
  seq: number;
  claimedAt: number;
  lastAt: number;
  /** a claim in flight */
  pending: boolean;
  /** a move heard while the claim was in flight: decided when its number is known */
  movedTo: { to: string; seq: number } | null;
}

interface Move {
  m?: string;
  h?: string;
  to?: string;
  seq?: number;
  values?: HandedValue[];
}

export class CrowdClaims {
  /** this process's claims, by layout, then by participant */
  private readonly claims = new Map<string, Map<string, Claim>>();
  /** the moves channels subscribed (or being subscribed), by layout */
  private readonly subscribed = new Map<string, Promise<void>>();
  private readonly sweeper: NodeJS.Timeout;
  private subscribedOnce = false;

  constructor(
    private readonly redis: RedisClient,
    /** a sharded subscriber of its own (SSUBSCRIBE) */
    private readonly subscriber: RedisClient,
    private readonly keys: RedisKeys,
    /** this process, as claims and summaries name it */
    private readonly source: string,
    private readonly holder: CrowdHolder,
    private readonly o: CrowdClaimsOptions,
  ) {
    subscriber.on('smessage', (channel: string, text: string) => this.heard(channel, text));
    subscriber.on('ready', () => {
      if (this.subscribedOnce) void this.recheck();
      this.subscribedOnce = true;
    });
    this.sweeper = setInterval(() => this.sweep(), SWEEP_MS);
    this.sweeper.unref();
  }

  /** A participant's aggregated action here, before it is counted: claims it when this process does not hold it, or its claim is due again. */
  seen(layoutId: string, sub: string, at: number): void {
    let layout = this.claims.get(layoutId);
    if (!layout) this.claims.set(layoutId, (layout = new Map<string, Claim>()));
    const c = layout.get(sub);
    if (c) {
      c.lastAt = at;
      if (!c.pending && at - c.claimedAt >= CLAIM_REFRESH_MS) void this.claim(layoutId, sub, c, at);
      return;
    }
    const claim: Claim = { seq: 0, claimedAt: at, lastAt: at, pending: true, movedTo: null };
    layout.set(sub, claim);
    void this.subscribe(layoutId).then(() => this.claim(layoutId, sub, claim, at));
  }

  /** Participants this process holds claims for (all layouts). */
  get held(): number {
    let n = 0;
    for (const layout of this.claims.values()) n += layout.size;
    return n;
  }

  private subscribe(layoutId: string): Promise<void> {
    let s = this.subscribed.get(layoutId);
    if (!s) {
      s = this.subscriber.ssubscribe(this.keys.crowdMoves(layoutId, this.source)).then(
        () => {},
        () => {
          this.o.onUnavailable('crowd_moves_subscribe');
          this.subscribed.delete(layoutId); // tried again at the next claim
        },
      );
      this.subscribed.set(layoutId, s);
    }
    return s;
  }

  private async claim(layoutId: string, sub: string, c: Claim, at: number): Promise<void> {
    c.pending = true;
    try {
      const [, seq] = (await runScript(this.redis, 'claimCrowd', [this.keys.crowdOwner(layoutId, sub), this.keys.crowdClaims(layoutId)], [this.source, CLAIM_TTL_MS, this.keys.crowdMoves(layoutId, ''), sub])) as [string, number];
      c.seq = Number(seq);
      c.claimedAt = at;
    } catch {
      this.o.onUnavailable('crowd_claim');
      c.claimedAt = -Infinity; // made again at the participant's next action
    } finally {
      c.pending = false;
    }
    const moved = c.movedTo;
    c.movedTo = null;
    if (moved && moved.seq > c.seq) this.letGo(layoutId, sub, moved.to, moved.seq);
  }

  private heard(channel: string, text: string): void {
    const layoutId = this.layoutOfChannel(channel);
    if (layoutId === null) return;
    let msg: Move;
    try {
      msg = JSON.parse(text) as Move;
    } catch {
      return;
    }
    if (typeof msg.to !== 'string' || typeof msg.seq !== 'number') return;
    if (typeof msg.m === 'string') this.moved(layoutId, msg.m, msg.to, msg.seq);
    else if (typeof msg.h === 'string' && msg.to === this.source && Array.isArray(msg.values)) this.handedOver(layoutId, msg.h, msg.values);
  }

  private layoutOfChannel(channel: string): string | null {
    const m = /\{([^}]*)\}:crowd-moves:/.exec(channel);
    return m && channel === this.keys.crowdMoves(m[1]!, this.source) ? m[1]! : null;
  }

  /** Another process claimed the participant (claim number `seq`): unless this process's own claim is newer, it lets go. */
  private moved(layoutId: string, sub: string, to: string, seq: number): void {
    if (to === this.source) return;
    const c = this.claims.get(layoutId)?.get(sub);
    if (!c) return;
    if (c.pending) {
      if (!c.movedTo || seq > c.movedTo.seq) c.movedTo = { to, seq };
      return;
    }
    if (seq > c.seq) this.letGo(layoutId, sub, to, seq);
  }

  /** Takes the participant out of this process's crowd and hands what it held to the process that has it now. */
  private letGo(layoutId: string, sub: string, to: string, seq: number): void {
    this.claims.get(layoutId)?.delete(sub);
    const values = this.holder.release(layoutId, sub);
    if (values.length === 0) return;
    const handover = JSON.stringify({ h: sub, to, seq, values });
    this.redis.spublish(this.keys.crowdMoves(layoutId, to), handover).catch(() => this.o.onUnavailable('crowd_handover'));
  }

  private handedOver(layoutId: string, sub: string, values: HandedValue[]): void {
    if (!this.claims.get(layoutId)?.has(sub)) return; // moved on again meanwhile
    this.holder.adopt(layoutId, sub, values, (lid) => this.o.controlOf(layoutId, lid));
  }

  /** After a lost subscription: every participant held here that another process claimed meanwhile is let go. */
  private async recheck(): Promise<void> {
    for (const [layoutId, layout] of this.claims) {
      const subs = [...layout.keys()];
      for (let i = 0; i < subs.length; i += RECHECK_BATCH) {
        const batch = subs.slice(i, i + RECHECK_BATCH);
        try {
          const owners = await this.redis.mget(...batch.map((s) => this.keys.crowdOwner(layoutId, s)));
          batch.forEach((sub, j) => {
            const owner = owners[j];
            const c = layout.get(sub);
            if (owner && owner !== this.source && c && !c.pending) this.letGo(layoutId, sub, owner, 0);
          });
        } catch {
          this.o.onUnavailable('crowd_claims_recheck');
        }
      }
    }
  }

  /** Forgets the claims of participants that left every window here, and the channels of layouts with none. */
  private sweep(): void {
    const before = this.o.now() - FORGET_AFTER_MS;
    for (const [layoutId, layout] of this.claims) {
      for (const [sub, c] of layout) if (!c.pending && c.lastAt < before) layout.delete(sub);
      if (layout.size > 0) continue;
      this.claims.delete(layoutId);
      if (this.subscribed.delete(layoutId)) this.subscriber.sunsubscribe(this.keys.crowdMoves(layoutId, this.source)).catch(() => this.o.onUnavailable('crowd_moves_unsubscribe'));
    }
  }

  stop(): void {
    clearInterval(this.sweeper);
    this.subscriber.disconnect();
  }
}
