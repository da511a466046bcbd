// One participant, one process at a time, across gateway processes: the process that last claimed
// a participant counts it in the crowd, keeps its budget and holds its live sockets. A process
// claims a participant at its first action there and at each socket it opens (claimParticipant-3.lua:
// one SET ... GET of the participant's owner key, numbered by the layout's claim counter), and again
// at an action once its claim is CLAIM_REFRESH_MS old, so the owner key outlives every window the
// participant is held in; a participant with a socket here and no action is claimed again by the
// sweep. When a claim took the participant from another process, Redis publishes the move on that
// process's own sharded channel of the layout: it takes the participant out of every crowd window
// of the layout (its next fold tick says so to the bridge), publishes what it held and what is left
// of its budget on the new process's channel, and closes its own sockets of the participant with
// CLOSE.replaced when the move was a socket's. The new process counts the values with the times
// they came (except where the participant has acted there since) and takes over what is left of
// the budget. So Redis works per join and per move (and per participant every CLAIM_REFRESH_MS),
// never per action, and each message reaches the one process it is for.
// A process listens to its channel of a layout while it holds participants of it, subscribed
// before its first claim there. Its subscriber coming back from a lost connection may have missed
// moves, and a failover (the cluster's nodes changed) may have lost the last claims, replication
// being asynchronous: it then reads the owner of every participant it holds, and for each one it
// does not own makes its claim again where the owner key is gone or names a process the
// participant left before this claim, and lets go where a later claim holds it. Claim numbers
// follow Redis's clock, so they keep their order across a failover (claimParticipant-3.lua).
import type { RedisClient } from '../../runtime/redis.js';
import { WINDOW_MS_MAX } from '../../schemas/aggregate.js';
import type { HandedBudget } from '../limits/participant-limits.js';
import type { RedisKeys } from '../store/keys.js';
import { runScript } from '../store/scripts.js';
import type { AggregatedControl, HandedValue } from '../crowd/crowd-fold.js';

/** A participant's claim is made again at its next action (or by the sweep, for one with a socket here) once it is this old (ms). */
export const CLAIM_REFRESH_MS = 5 * 60_000;
/** How long a claim lasts in Redis: the longest window after its last renewal, so the owner key outlives every holder. */
export const CLAIM_TTL_MS = CLAIM_REFRESH_MS + WINDOW_MS_MAX + 60_000;
/** A participant not seen for this long (and with no socket here) is in no window here any more, and its claim is forgotten. */
const FORGET_AFTER_MS = WINDOW_MS_MAX + 10_000;
const SWEEP_MS = 10_000;
/** Owners read at once after a lost subscription or a failover. */
const RECHECK_BATCH = 500;
/** A check after the cluster's nodes changed waits this long for the new master (then again, while Redis does not answer, RECHECK_TRIES times at most). */
const RECHECK_AFTER_MS = 1000;
const RECHECK_TRIES = 30;
/** How long a participant that moved here waits for the hand-over before its actions go on without it (its process gone, or the message lost). */
export const HANDOVER_WAIT_MS = 100;

/** What the crowd fold does for the claims: let a participant go, and count what another process held. */
export interface CrowdHolder {
  release(layoutId: string, sub: string): HandedValue[];
  adopt(layoutId: string, sub: string, handed: readonly HandedValue[], controlOf: (lid: number) => AggregatedControl | undefined): void;
}

/** What the budgets do for the claims (ParticipantLimits, with the layout's rates). */
export interface BudgetHolder {
  handOff(sub: string): HandedBudget;
  takeOver(layoutId: string, sub: string, handed: HandedBudget, spent: number, spentStrings: number): void;
}

/** The live sockets of this process, as the claims ask after them (the live channel, once it is there). */
export interface ParticipantSockets {
  /** whether this process holds live sockets of the participant on the layout (they keep its claim) */
  hasParticipant(layoutId: string, sub: string): boolean;
  /** another process opened a socket of the participant: this process's sockets of it close (CLOSE.replaced) */
  replaced(layoutId: string, sub: string): void;
}

export interface ParticipantClaimsOptions {
  /** an aggregated control of the layout's cached definition, by lid (a hand-over names its controls by lid) */
  controlOf: (layoutId: string, lid: number) => AggregatedControl | undefined;
  /** a claim, subscription or hand-over that Redis refused or did not answer: counted */
  onUnavailable: (what: string) => void;
  /** a claim took the participant from another process; `handedOver` false: its hand-over did not come in time */
  onMoved?: (handedOver: boolean) => void;
  now: () => number;
  /** LIVE_OPENS_PER_PARTICIPANT_PER_MINUTE: a socket past them over every process claims nothing (it closes with CLOSE.flooding) */
  opensPerMinute: number;
}

interface Claim {
  /** the claim's number in the layout (0: not yet made) */
  seq: number;
  claimedAt: number;
  lastAt: number;
  /** a claim in flight */
  pending: boolean;
  /** actions and Strings taken from the budget since this claim was made (what the budget handed over is lessened by) */
  spent: number;
  spentStrings: number;
  /** a move heard while the claim was in flight: decided when its number is known */
  movedTo: { to: string; seq: number; socket: boolean } | null;
  /** until the claim is made and, after a move, the hand-over is in (or HANDOVER_WAIT_MS passed): the participant's actions wait for it; null once ready */
  ready: Promise<void> | null;
  /** ends the wait for the hand-over */
  handedOver: (() => void) | null;
}

interface Message {
  m?: string;
  h?: string;
  to?: string;
  seq?: number;
  socket?: boolean;
  values?: HandedValue[];
  budget?: HandedBudget;
}

export class ParticipantClaims {
  /** this process's claims, by layout, then by participant */
  private readonly claims = new Map<string, Map<string, Claim>>();
  /** this process's channels subscribed (or being subscribed), by layout */
  private readonly subscribed = new Map<string, Promise<void>>();
  private readonly sweeper: NodeJS.Timeout;
  private subscribedOnce = false;
  /** a check of the claims waiting or under way (coalesced), and its tries left */
  private recheckTimer: NodeJS.Timeout | null = null;
  private recheckTries = 0;
  /** the live sockets (none until the live channel attaches them: no socket then holds a claim) */
  private sockets: ParticipantSockets | null = null;

  constructor(
    private readonly redis: RedisClient,
    /** a sharded subscriber of its own (SSUBSCRIBE) */
    private readonly subscriber: RedisClient,
    private readonly keys: RedisKeys,
    /** this process, as claims and summaries name it */
    private readonly source: string,
    private readonly crowd: CrowdHolder,
    private readonly budgets: BudgetHolder,
    private readonly o: ParticipantClaimsOptions,
  ) {
    subscriber.on('smessage', (channel: string, text: string) => this.heard(channel, text));
    subscriber.on('ready', () => {
      if (this.subscribedOnce) this.recheckSoon(0);
      this.subscribedOnce = true;
    });
    // a Redis Cluster's nodes changed: a master lost (its last claims may be lost with it), a replica promoted
    redis.on('-node', () => this.recheckSoon(RECHECK_AFTER_MS));
    redis.on('+node', () => this.recheckSoon(RECHECK_AFTER_MS));
    this.sweeper = setInterval(() => this.sweep(), SWEEP_MS);
    this.sweeper.unref();
  }

  /** The live channel's sockets: they keep their participants' claims, and close when another process takes one. */
  attachSockets(sockets: ParticipantSockets): void {
    this.sockets = sockets;
  }

  /**
   * Before a participant's action is checked against its budget: null when this process holds the
   * participant, else the promise that it does (claimed, and what the process it came from held
   * handed over, or HANDOVER_WAIT_MS passed). Never rejects.
   */
  acquire(layoutId: string, sub: string, at: number): Promise<void> | null {
    const c = this.claims.get(layoutId)?.get(sub);
    if (c && c.ready === null) return null;
    return (c ?? this.claimOf(layoutId, sub, at)).ready;
  }

  /**
   * A participant's action here, once its budget took it (`string`: a String): its claim is made
   * again when due (and made, should the participant have moved on since it was acquired).
   */
  seen(layoutId: string, sub: string, at: number, string = false): void {
    const c = this.claimOf(layoutId, sub, at);
    c.lastAt = at;
    c.spent++;
    if (string) c.spentStrings++;
    if (!c.pending && c.ready === null && at - c.claimedAt >= CLAIM_REFRESH_MS) void this.claim(layoutId, sub, c, at, 'action');
  }

  /**
   * A live socket of the participant opened here: claimed, so that its sockets elsewhere close.
   * Resolves with its opens this minute over every process (0: Redis did not say), and `older`:
   * a socket of the participant that opened later holds it elsewhere (their claims crossed), so
   * this one is the one to close.
   */
  opened(layoutId: string, sub: string): Promise<{ opens: number; older: boolean }> {
    const at = this.o.now();
    const c = this.claimOf(layoutId, sub, at, false);
    c.lastAt = at;
    const claimed = this.subscribe(layoutId).then(() => this.claim(layoutId, sub, c, at, 'socket'));
    c.ready ??= claimed.then(() => {}); // its actions here wait for the claim and the hand-over
    return claimed;
  }

  /** The participant's claim here; when there is none, one is made (pending; claimed after the subscription, unless `claimNow` is false). */
  private claimOf(layoutId: string, sub: string, at: number, claimNow = true): Claim {
    let layout = this.claims.get(layoutId);
    if (!layout) this.claims.set(layoutId, (layout = new Map<string, Claim>()));
    let c = layout.get(sub);
    if (c) return c;
    c = { seq: 0, claimedAt: at, lastAt: at, pending: true, spent: 0, spentStrings: 0, movedTo: null, ready: null, handedOver: null };
    layout.set(sub, c);
    const made = c;
    if (claimNow) c.ready = this.subscribe(layoutId).then(() => this.claim(layoutId, sub, made, at, 'action')).then(() => {});
    return c;
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
      s = this.subscriber.ssubscribe(this.keys.processChannel(layoutId, this.source)).then(
        () => {},
        () => {
          this.o.onUnavailable('participant_channel_subscribe');
          this.subscribed.delete(layoutId); // tried again at the next claim
        },
      );
      this.subscribed.set(layoutId, s);
    }
    return s;
  }

  /**
   * Runs the claim script; after a move, waits for the hand-over (HANDOVER_WAIT_MS at most). Resolves
   * with the participant's opens this minute (a socket's claim), else 0, and whether a later socket
   * holds the participant elsewhere (then no claim was made); never rejects.
   */
  private async claim(layoutId: string, sub: string, c: Claim, at: number, kind: 'action' | 'socket' | 'refresh' | 'reclaim'): Promise<{ opens: number; older: boolean }> {
    if (kind !== 'socket' && c.pending && c.seq !== 0) return { opens: 0, older: false }; // one in flight already
    c.pending = true;
    let opens = 0;
    let older = false;
    let movedHere = false;
    let superseded: string | null = null;
    try {
      const keys = [this.keys.participantOwner(layoutId, sub), this.keys.participantClaims(layoutId), this.keys.participantOpens(layoutId, sub)];
      const [held, seq, n, lost] = (await runScript(this.redis, 'claimParticipant', keys, [this.source, CLAIM_TTL_MS, this.keys.processChannel(layoutId, ''), sub, kind, Math.round(at), this.o.opensPerMinute])) as [string, number, number, number];
      opens = Number(n);
      older = Number(lost) === 1;
      if (older || Number(lost) === 2) {
        if (c.seq === 0) this.claims.get(layoutId)?.delete(sub); // never held here (an older socket, or one past the opens a minute)
      } else if (Number(lost) === 3) {
        superseded = held; // a reclaim: a later claim holds the participant there
      } else if (kind === 'refresh') {
        if (held !== this.source && held !== '') this.letGo(layoutId, sub, held, 0, false); // claimed elsewhere, its message missed
        else c.claimedAt = at;
      } else {
        c.seq = Math.max(c.seq, Number(seq));
        c.claimedAt = at;
        movedHere = kind !== 'reclaim' && held !== '' && held !== this.source; // a reclaim's old owner let go long ago: no hand-over comes
      }
    } catch {
      this.o.onUnavailable('participant_claim');
      c.claimedAt = -Infinity; // made again at the participant's next action
    } finally {
      c.pending = false;
    }
    const moved = c.movedTo;
    c.movedTo = null;
    if (superseded !== null) this.letGo(layoutId, sub, superseded, 0, false);
    else if (moved && moved.seq > c.seq) this.letGo(layoutId, sub, moved.to, moved.seq, moved.socket);
    else if (movedHere) this.o.onMoved?.(await this.handover(c));
    c.ready = null;
    return { opens, older };
  }

  /** Waits for the hand-over of the process the participant came from, HANDOVER_WAIT_MS at most: whether it came. */
  private handover(c: Claim): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        c.handedOver = null;
        resolve(false);
      }, HANDOVER_WAIT_MS);
      c.handedOver = () => {
        clearTimeout(timer);
        c.handedOver = null;
        resolve(true);
      };
    });
  }

  private heard(channel: string, text: string): void {
    const layoutId = this.layoutOfChannel(channel);
    if (layoutId === null) return;
    let msg: Message | null = null;
    try {
      msg = JSON.parse(text) as Message;
    } catch {
      // counted below: only gateways publish here, so an unreadable message is a bug or a stranger
    }
    if (typeof msg?.to !== 'string' || typeof msg.seq !== 'number') return this.o.onUnavailable('participant_message_unreadable');
    if (typeof msg.m === 'string') this.moved(layoutId, msg.m, msg.to, msg.seq, msg.socket === true);
    else if (typeof msg.h === 'string' && msg.to === this.source) this.handedOver(layoutId, msg.h, Array.isArray(msg.values) ? msg.values : [], msg.budget ?? {});
  }

  private layoutOfChannel(channel: string): string | null {
    const m = /\{([^}]*)\}:process:/.exec(channel);
    return m && channel === this.keys.processChannel(m[1]!, this.source) ? m[1]! : null;
  }

  /** Another process claimed the participant (claim number `seq`): unless this process's own claim is newer, it lets go. */
  private moved(layoutId: string, sub: string, to: string, seq: number, socket: boolean): void {
    if (to === this.source) return;
    const c = this.claims.get(layoutId)?.get(sub);
    if (!c) {
      if (socket && this.sockets?.hasParticipant(layoutId, sub)) this.sockets.replaced(layoutId, sub);
      return;
    }
    if (c.pending) {
      if (!c.movedTo || seq > c.movedTo.seq) c.movedTo = { to, seq, socket };
      return;
    }
    if (seq > c.seq) this.letGo(layoutId, sub, to, seq, socket);
  }

  /** Takes the participant out of this process and hands what it held to the process that has it now. */
  private letGo(layoutId: string, sub: string, to: string, seq: number, socket: boolean): void {
    this.claims.get(layoutId)?.delete(sub);
    if (socket) this.sockets?.replaced(layoutId, sub);
    const values = this.crowd.release(layoutId, sub);
    const budget = this.budgets.handOff(sub);
    // sent even when empty: the process the participant moved to waits for it before taking its actions
    const handover = JSON.stringify({ h: sub, to, seq, values, budget });
    this.redis.spublish(this.keys.processChannel(layoutId, to), handover).catch(() => this.o.onUnavailable('participant_handover'));
  }

  private handedOver(layoutId: string, sub: string, values: HandedValue[], budget: HandedBudget): void {
    const c = this.claims.get(layoutId)?.get(sub);
    // the budget is taken over even when the participant moved on meanwhile (a participant hopping
    // faster than the hand-overs): this process's budget then hands it on at the next move from here
    this.budgets.takeOver(layoutId, sub, budget, c?.spent ?? 0, c?.spentStrings ?? 0);
    if (c && values.length > 0) this.crowd.adopt(layoutId, sub, values, (lid) => this.o.controlOf(layoutId, lid));
    c?.handedOver?.();
  }

  /** Checks the claims `afterMs` from now (a check already waiting stands), trying again while Redis does not answer. */
  private recheckSoon(afterMs: number): void {
    this.recheckTries = RECHECK_TRIES;
    if (this.recheckTimer) return;
    const run = () => {
      this.recheckTimer = null;
      void this.recheck().then((complete) => {
        if (!complete && --this.recheckTries > 0 && !this.recheckTimer) this.recheckTimer = setTimeout(run, RECHECK_AFTER_MS).unref();
      });
    };
    this.recheckTimer = setTimeout(run, afterMs).unref();
  }

  /**
   * After a lost subscription or a failover: every participant held here whose owner key is not
   * this process's is claimed again (a 'reclaim'), which the script makes only where the key is gone
   * or names a process the participant left before this claim (a claim the failover lost), and
   * which lets the participant go where a later claim holds it. Whether every owner was read.
   */
  private async recheck(): Promise<boolean> {
    let complete = true;
    for (const [layoutId, layout] of this.claims) {
      const subs = [...layout.keys()];
      for (let i = 0; i < subs.length; i += RECHECK_BATCH) {
        const batch = subs.slice(i, i + RECHECK_BATCH);
        try {
          const owners = await this.redis.mget(...batch.map((s) => this.keys.participantOwner(layoutId, s)));
          batch.forEach((sub, j) => {
            const owner = owners[j]?.split(' ')[0]; // "<process> <ms>"
            const c = layout.get(sub);
            if (owner === this.source || !c || c.pending) return; // a claim in flight decides for itself
            void this.claim(layoutId, sub, c, Number.isFinite(c.claimedAt) ? c.claimedAt : c.lastAt, 'reclaim');
          });
        } catch {
          complete = false;
          this.o.onUnavailable('participant_claims_recheck');
        }
      }
    }
    return complete;
  }

  /**
   * Forgets the claims of participants that left every window here and hold no socket here, claims
   * again those with a socket whose claim is due, and leaves the channels of layouts with none.
   */
  private sweep(): void {
    const now = this.o.now();
    for (const [layoutId, layout] of this.claims) {
      for (const [sub, c] of layout) {
        if (c.pending) continue;
        const sockets = this.sockets?.hasParticipant(layoutId, sub) ?? false;
        if (sockets && now - c.claimedAt >= CLAIM_REFRESH_MS) void this.claim(layoutId, sub, c, now, 'refresh');
        else if (!sockets && c.lastAt < now - FORGET_AFTER_MS) layout.delete(sub);
      }
      if (layout.size > 0) continue;
      this.claims.delete(layoutId);
      if (this.subscribed.delete(layoutId)) this.subscriber.sunsubscribe(this.keys.processChannel(layoutId, this.source)).catch(() => this.o.onUnavailable('participant_channel_unsubscribe'));
    }
  }

  stop(): void {
    clearInterval(this.sweeper);
    if (this.recheckTimer) clearTimeout(this.recheckTimer);
    this.subscriber.disconnect();
  }
}
