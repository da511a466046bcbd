// One layout's send loop. Entries offered by the consumer wait in one queue per target; on every
// tick (tickHz, drift-corrected) each target gets at most `maxMessagesPerTick` due messages as
// OSC bundles packed into datagrams of at most 1,400 bytes, timetagged with the gateway receive
// time plus playoutDelayMs (or "immediately"). A sent batch is confirmed on the next tick unless
// the display refused it meanwhile (then it is sent again after a backoff). An entry is acked
// once every target has confirmed it, coalesced it away, or dropped it as stale; its outcome is
// counted once: sent if any target sent it, else coalesced, else stale. Entries are checked for
// what OSC can carry when offered, so one it refuses never reaches a tick; each tick encodes its
// messages straight into the datagrams it sends. Acks go through an AckQueue
// (bounded retries). The ticks' schedule is a TickLoop (tick-loop.ts); no error leaves it. The
// same ticks send the crowd's changed values and fired cues (crowd-lanes.ts); the targets'
// transports, routers and send counting are target-lanes.ts.
import type { ActionEntry } from '../schemas/types.js';
import { AckQueue } from './ack-queue.js';
import type { BridgeCounters, LayoutCounters } from './counters.js';
import { CrowdLanes } from './crowd-lanes.js';
import type { Logger } from '../runtime/log.js';
import { messageArgs, oscRefusal, packDatagrams, playoutGroups, type OscArg } from './osc.js';
import { SeenIds } from './seen-ids.js';
import { MAX_DATAGRAM_BYTES, TargetLanes, type TargetLane, type TargetSettings } from './target-lanes.js';
import type { Delivery } from './target-queue.js';
import { TickLoop } from './tick-loop.js';
import type { DmxLane } from './dmx/dmx-lane.js';

/** What became of an offered entry. */
export type Offered =
  | { kind: 'queued' }
  /** its action id was handled or is queued under another stream id: counted, acked */
  | { kind: 'duplicate' }
  /** the OSC encoding cannot carry it: the caller dead-letters it */
  | { kind: 'unencodable'; reason: string };

type Outcome = 'sent' | 'coalesced' | 'stale';
const RANK: Record<Outcome, number> = { stale: 0, coalesced: 1, sent: 2 };
const COUNTER: Record<Outcome, 'sent' | 'coalesced' | 'droppedStale'> = { sent: 'sent', coalesced: 'coalesced', stale: 'droppedStale' };

export interface LayoutSettings {
  layoutId: string;
  tickHz: number;
  playoutDelayMs: number;
  maxAgeMs: number;
  maxMessagesPerTick: number;
  targets: readonly TargetSettings[];
}

export class LayoutScheduler {
  private readonly targets: TargetLanes;
  private readonly lanes: readonly TargetLane[];
  /** deliveries not yet finished, by action id */
  private readonly queued = new Map<string, Delivery>();
  /** the stream ids those deliveries carry (their own and their duplicates') */
  private readonly heldIds = new Set<string>();
  /** action ids finished (at least the last 100,000) */
  private readonly done = new SeenIds(100_000);
  private readonly c: LayoutCounters;
  private readonly acks: AckQueue;
  /** the layout's crowd: the merged values and the cues owed to each target (the consumer offers summaries, cues.ts sends cues) */
  readonly crowd: CrowdLanes;
  /** the ticks' schedule; a reader with work left yields to a due tick through it (consumer.ts) */
  readonly clock: TickLoop;
  /** last time the tick loop completed a tick (for the watchdog) */
  lastProgress = 0;
  /** the layout's DMX universes (bridge/dmx): each action, crowd value and cue also goes to them */
  dmx: readonly DmxLane[] = [];
  /** told what each target (by its place in the list) was sent, once it went out (OSCQuery's values and LISTEN) */
  onPlayed: ((target: number, messages: readonly { address: string; args: readonly OscArg[] }[]) => void) | null = null;

  constructor(
    readonly settings: LayoutSettings,
    ack: (streamIds: string[]) => Promise<void>,
    private readonly counters: BridgeCounters,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
    /** a time in `now`'s clock (Redis's) in this host's, which its displays share: for timetags */
    private readonly toLocal: (ms: number) => number = (ms) => ms,
  ) {
    this.targets = new TargetLanes(settings.targets, settings.layoutId, counters, log, now);
    this.lanes = this.targets.all;
    this.c = counters.layout(settings.layoutId);
    this.acks = new AckQueue(ack, this.c, log, settings.layoutId, now);
    this.crowd = new CrowdLanes(this.targets, () => this.dmx, this.acks, this.c, settings.playoutDelayMs, now, toLocal);
    this.clock = new TickLoop(settings.tickHz, () => this.tick(), { late: (ms) => counters.recordLateness(ms), failed: (e) => this.tickFailed(e), now });
  }

  get targetNames(): string[] {
    return [...this.lanes.map((l) => l.target.name), ...this.dmx.map((d) => d.name)];
  }

  /** The longest target queue: the consumer stops reading while it is large (backpressure). */
  backlog(): number {
    return Math.max(0, ...this.lanes.map((l) => l.queue.length + (l.unconfirmed?.ds.length ?? 0)));
  }

  /** Entries read and not yet finished (the "pending" of the counter identity). */
  pending(): number {
    return this.queued.size;
  }

  /** True while this stream id is queued here (a re-read of it is not a new entry). */
  holds(streamId: string): boolean {
    return this.heldIds.has(streamId);
  }

  /** Whether this run settled this stream id (sent it, or dropped it for a counted reason), acked or not. */
  settled(streamId: string): boolean {
    return this.acks.has(streamId);
  }

  /** A stream id to acknowledge with the next tick's XACK (an entry the reader settled itself). */
  ackLater(streamId: string): void {
    this.acks.add(streamId);
  }

  /**
   * Takes a decoded stream entry whose stream id it does not hold yet (the reader asks `holds()`
   * first). An action id already handled is acked at once; one still queued is not queued twice; one
   * the OSC encoding refuses is handed back for the dead-letter stream.
   */
  offer(streamId: string, entry: ActionEntry): Offered {
    const pending = this.queued.get(entry.id);
    if (pending) {
      pending.alsoAck.push(streamId);
      this.heldIds.add(streamId);
      this.c.duplicates++;
      return { kind: 'duplicate' };
    }
    if (this.done.has(entry.id)) {
      this.c.duplicates++;
      this.acks.add(streamId);
      return { kind: 'duplicate' };
    }
    const refusal = oscRefusal(entry);
    if (refusal) return { kind: 'unencodable', reason: `the OSC encoding refused it: ${refusal}` };
    const d: Delivery = { streamId, entry, remaining: this.lanes.length, alsoAck: [] };
    this.queued.set(entry.id, d);
    this.heldIds.add(streamId);
    for (const lane of this.lanes) lane.queue.push(d); // a value it supersedes comes out of take() as coalesced
    for (const u of this.dmx) u.action(entry); // a universe holds values, not messages: it takes the action now
    if (this.lanes.length === 0 && this.dmx.length > 0) this.finish(d, 'sent'); // only universes: played once they have it
    return { kind: 'queued' };
  }

  /**
   * Settles an action read after maxAgeMs without sending it, acked with the next tick. It counts
   * as stale once: its id joins the finished ones, so the same action read again (its XACK lost, or
   * given up) counts as a duplicate.
   */
  dropStale(streamId: string, entry: ActionEntry): void {
    if (this.queued.has(entry.id) || this.done.has(entry.id)) this.c.duplicates++;
    else {
      this.done.add(entry.id);
      this.c.droppedStale++;
    }
    this.acks.add(streamId);
  }

  /** One target is done with a delivery; the last one counts its outcome and queues its ack. */
  private finish(d: Delivery, outcome: Outcome): void {
    if (d.outcome === undefined || RANK[outcome] > RANK[d.outcome]) d.outcome = outcome;
    if (--d.remaining > 0) return;
    this.c[COUNTER[d.outcome]]++;
    this.queued.delete(d.entry.id);
    this.heldIds.delete(d.streamId);
    for (const id of d.alsoAck) this.heldIds.delete(id);
    this.done.add(d.entry.id);
    this.acks.add(d.streamId);
    for (const id of d.alsoAck) this.acks.add(id);
  }

  /** Settles the previous batch: refused -> back in the queue (sent again after the backoff), else done. */
  private settle(lane: TargetLane): void {
    const batch = lane.unconfirmed;
    if (!batch) return;
    lane.unconfirmed = null;
    if (lane.target.refusals > batch.refusals) {
      this.counters.target(lane.target.name).sendErrors++;
      lane.queue.requeue(batch.ds);
      this.targets.sendFailed(lane, 'the display refused the datagrams (ECONNREFUSED)');
    } else {
      lane.target.confirmed();
      for (const d of batch.ds) this.finish(d, 'sent');
    }
  }

  private async sendLane(lane: TargetLane, i: number): Promise<void> {
    this.settle(lane);
    const { send, coalesced } = lane.queue.take(this.settings.maxMessagesPerTick);
    for (const d of coalesced) this.finish(d, 'coalesced');
    const now = this.now();
    const fresh: Delivery[] = [];
    for (const d of send) {
      if (now - d.entry.ts > this.settings.maxAgeMs) this.finish(d, 'stale');
      else fresh.push(d);
    }
    if (fresh.length === 0) return;
    if (!lane.target.ready()) {
      lane.queue.requeue(fresh);
      return;
    }
    const groups = this.targets.counted(lane, () => lane.router.groups(playoutGroups(fresh, this.settings.playoutDelayMs, this.toLocal)));
    if (groups.length === 0) {
      for (const d of fresh) this.finish(d, 'sent'); // routed to nothing on this target (unrouted: drop)
      return;
    }
    const { datagrams, bundles } = packDatagrams(groups, lane.booleans, MAX_DATAGRAM_BYTES);
    const refusals = lane.target.refusals;
    try {
      await this.targets.transmit(lane, datagrams, fresh.length, bundles);
      lane.unconfirmed = { ds: fresh, refusals };
    } catch (e) {
      lane.queue.requeue(fresh);
      this.targets.sendFailed(lane, (e as Error).message);
      return;
    }
    if (this.onPlayed) this.onPlayed(i, groups.flatMap((g) => g.entries.map((m) => ({ address: m.address, args: messageArgs(m, lane.booleans) }))));
  }

  /** Each target's name and whether its display is reachable, as its transport can tell. */
  targetStates(): { target: string; up: boolean }[] {
    return [...this.lanes.map((l) => ({ target: l.target.name, up: l.target.up() })), ...this.dmx.map((d) => ({ target: d.name, up: d.up() }))];
  }

  private async sendCrowd(lane: TargetLane, i: number): Promise<void> {
    const sent = await this.crowd.send(lane, i);
    if (sent) this.onPlayed?.(i, sent);
  }

  /** One tick: every target's due messages, then one XACK for everything finished (not awaited). */
  async tick(): Promise<void> {
    this.crowd.collect();
    for (const l of this.lanes) l.target.probe();
    await Promise.all(this.lanes.map((l, i) => Promise.all([this.sendLane(l, i), this.sendCrowd(l, i)])));
    this.acks.flush();
    this.lastProgress = this.now();
  }

  /** Why this layout's send loop is unhealthy, or null. */
  problem(): string | null {
    const f = this.clock.failure();
    return f && `layout ${this.settings.layoutId}: send ticks failing for ${f.forMs} ms (${f.error})`;
  }

  /** A tick that threw: counted and logged; the loop goes on, and the watchdog sees no progress while it fails. */
  private tickFailed(e: unknown): void {
    this.c.tickErrors++;
    if (this.targets.shouldLog()) this.log.error({ layoutId: this.settings.layoutId, err: e }, 'send tick failed');
  }

  start(): void {
    this.clock.start();
    for (const u of this.dmx) u.start();
  }

  /** Stops ticking after sending what is queued (at most `drainMs`), and acks it. */
  async stop(drainMs = 2000): Promise<void> {
    await this.clock.stop();
    const until = this.now() + drainMs;
    while ((this.backlog() > 0 || this.acks.waiting) && this.now() < until) {
      await this.clock.runOnce();
      await new Promise((r) => setTimeout(r, 1000 / this.settings.tickHz)); // paced, as while running
    }
    // Out of time with a batch still unconfirmed: settle it (acked unless refused by now).
    for (const l of this.lanes) this.settle(l);
    await this.acks.drain();
    for (const l of this.lanes) l.target.close();
    await Promise.all(this.dmx.map((u) => u.stop())); // each universe's fallback, then the source ends
  }
}
