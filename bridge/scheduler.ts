// One layout's send loop. Entries offered by the consumer wait in one queue per target; on every
// tick (tickHz, drift-corrected) each target gets at most `maxMessagesPerTick` due messages as
// OSC bundles packed into datagrams of at most 1,400 bytes, timetagged with the gateway receive
// time plus playoutDelayMs (or "immediately"). A sent batch is confirmed on the next tick unless
// the display refused it meanwhile (then it is sent again after a backoff). An entry is acked
// once every target has confirmed it, coalesced it away, or dropped it as stale; its outcome is
// counted once: sent if any target sent it, else coalesced, else stale. Entries are checked for
// what OSC can carry when offered, so one it refuses never reaches a tick; each tick encodes its
// messages straight into the datagrams it sends. Acks go through an AckQueue
// (bounded retries). The ticks' schedule is a TickLoop (tick-loop.ts); no error leaves it.
import type { ActionEntry } from '../schemas/types.js';
import type { CrowdSummary } from '../schemas/aggregate.js';
import { AckQueue } from './ack-queue.js';
import type { CrowdValue } from '../schemas/crowd-merge.js';
import { crowdDatagrams } from './crowd.js';
import { CrowdOutbox } from './crowd-outbox.js';
import type { BridgeCounters, LayoutCounters } from './counters.js';
import type { Logger } from '../runtime/log.js';
import { messageArgs, oscRefusal, packDatagrams, playoutGroups, timetag, type BooleanMode, type OscArg } from './osc.js';
import { Router, type RouteConfig, type Unrouted } from './routes.js';
import { SeenIds } from './seen-ids.js';
import { UdpTarget, type OscTarget } from './sender.js';
import { TcpTarget, type TcpFraming } from './tcp-target.js';
import { TargetQueue, type Delivery } from './target-queue.js';
import { TickLoop } from './tick-loop.js';
import type { DmxLane } from './dmx/dmx-lane.js';

export const MAX_DATAGRAM_BYTES = 1400;
const LOG_EVERY_MS = 5000;

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
  targets: readonly { readonly host: string; readonly port: number; readonly booleans: BooleanMode; readonly routes?: readonly RouteConfig[]; readonly unrouted?: Unrouted; readonly transport?: 'udp' | TcpFraming }[];
}

interface TargetLane {
  /** the display, over UDP or TCP */
  target: OscTarget;
  booleans: BooleanMode;
  /** this target's addresses and values (bridge/routes.ts) */
  router: Router;
  queue: TargetQueue;
  /** the last batch sent, awaiting the next tick to learn whether the display refused it */
  unconfirmed: { ds: Delivery[]; refusals: number } | null;
}

export class LayoutScheduler {
  private readonly lanes: TargetLane[];
  /** deliveries not yet finished, by action id */
  private readonly queued = new Map<string, Delivery>();
  /** the stream ids those deliveries carry (their own and their duplicates') */
  private readonly heldIds = new Set<string>();
  /** action ids finished (at least the last 100,000) */
  private readonly done = new SeenIds(100_000);
  private readonly c: LayoutCounters;
  private readonly acks: AckQueue;
  /** crowd aggregation: the merged values and the cues owed to each target */
  private readonly crowd: CrowdOutbox;
  /** how far the crowd's leases may run (heard()); null: no read yet, they run with the clock */
  private leasesRunUntil: number | null = null;
  /** the ticks' schedule; a reader with work left yields to a due tick through it (consumer.ts) */
  readonly clock: TickLoop;
  private lastErrorLog = 0;
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
    this.lanes = settings.targets.map((t) => ({ target: t.transport === undefined || t.transport === 'udp' ? new UdpTarget(t, now) : new TcpTarget(t, t.transport, now), booleans: t.booleans, router: new Router(t.routes, t.unrouted), queue: new TargetQueue(), unconfirmed: null }));
    this.crowd = new CrowdOutbox(this.lanes.length);
    this.c = counters.layout(settings.layoutId);
    this.acks = new AckQueue(ack, this.c, log, settings.layoutId, now);
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

  /**
   * The stream told this bridge what the gateways wrote up to `at` (Redis's clock), and a read
   * comes back within `graceMs` while all is well: the crowd's leases run until `at + graceMs` and
   * no further. A bridge that cannot read (its link cut, the layout's master failing over) learns
   * nothing of the gateways, so their silence then ends no lease; nor while it catches up on
   * entries written meanwhile.
   */
  heard(at: number, graceMs: number): void {
    this.leasesRunUntil = Math.max(this.leasesRunUntil ?? -Infinity, at + graceMs);
  }

  /** Takes a crowd summary (acked with the next tick: it is state, not a message to deliver). */
  offerSummary(streamId: string, summary: CrowdSummary): void {
    this.crowd.offer(summary);
    for (const u of this.dmx) u.summary(summary.lid);
    this.c.summaries++;
    this.acks.add(streamId);
  }

  /** The layout's merged crowd values now (what the displays were last sent). */
  crowdValues(): CrowdValue[] {
    return this.crowd.values();
  }

  /** A crowd cue fired: to every target with the next tick (kept for a target that is backing off). */
  sendCue(lid: number, address: string, value: number): void {
    this.crowd.cue({ lid, address, value });
    for (const u of this.dmx) u.cue(lid);
  }

  /** Sends target `i` the crowd values changed and the cues fired, in one bundle (one per control if they do not fit a datagram). */
  private async sendCrowd(lane: TargetLane, i: number): Promise<void> {
    if (!lane.target.ready()) return;
    const owed = this.crowd.take(i);
    if (!owed) return;
    const { playoutDelayMs } = this.settings;
    const perValue = this.counted(lane, () => lane.router.owed(owed));
    if (perValue.length === 0) return;
    try {
      const { datagrams, messages } = crowdDatagrams(perValue, timetag(playoutDelayMs > 0 ? this.toLocal(this.now()) + playoutDelayMs : null), MAX_DATAGRAM_BYTES);
      await this.transmit(lane, datagrams, messages, datagrams.length);
    } catch (e) {
      this.crowd.putBack(i, owed); // sent again when the target is back
      this.logSendError(lane, (e as Error).message);
      return;
    }
    this.onPlayed?.(i, perValue.flat());
  }

  /** Sends datagrams to a target and counts them; a failure is counted and thrown for the caller to requeue. */
  private async transmit(lane: TargetLane, datagrams: Buffer[], messages: number, bundles: number): Promise<void> {
    const c = this.counters.target(lane.target.name);
    try {
      await lane.target.send(datagrams);
    } catch (e) {
      c.sendErrors++;
      throw e;
    }
    c.messages += messages;
    c.bundles += bundles;
    c.datagrams += datagrams.length;
    c.bytes += datagrams.reduce((n, d) => n + d.length, 0);
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
      this.logSendError(lane, 'the display refused the datagrams (ECONNREFUSED)');
    } else {
      lane.target.confirmed();
      for (const d of batch.ds) this.finish(d, 'sent');
    }
  }

  private logSendError(lane: TargetLane, err: string): void {
    const now = this.now();
    if (now - this.lastErrorLog < 5000) return;
    this.lastErrorLog = now;
    this.log.warn({ target: lane.target.name, layoutId: this.settings.layoutId, err }, 'send failed; retrying with backoff');
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
    const groups = this.counted(lane, () => lane.router.groups(playoutGroups(fresh, this.settings.playoutDelayMs, this.toLocal)));
    if (groups.length === 0) {
      for (const d of fresh) this.finish(d, 'sent'); // routed to nothing on this target (unrouted: drop)
      return;
    }
    const { datagrams, bundles } = packDatagrams(groups, lane.booleans, MAX_DATAGRAM_BYTES);
    const refusals = lane.target.refusals;
    try {
      await this.transmit(lane, datagrams, fresh.length, bundles);
      lane.unconfirmed = { ds: fresh, refusals };
    } catch (e) {
      lane.queue.requeue(fresh);
      this.logSendError(lane, (e as Error).message);
      return;
    }
    if (this.onPlayed) this.onPlayed(i, groups.flatMap((g) => g.entries.map((m) => ({ address: m.address, args: messageArgs(m, lane.booleans) }))));
  }

  /** What a target's router makes; what it drops (unrouted: drop) is counted. */
  private counted<T>(lane: TargetLane, route: () => T): T {
    const before = lane.router.dropped;
    const out = route();
    this.counters.target(lane.target.name).unrouted += lane.router.dropped - before;
    return out;
  }

  /** Each target's name and whether its display is reachable, as its transport can tell. */
  targetStates(): { target: string; up: boolean }[] {
    return [...this.lanes.map((l) => ({ target: l.target.name, up: l.target.up() })), ...this.dmx.map((d) => ({ target: d.name, up: d.up() }))];
  }

  /** One tick: every target's due messages, then one XACK for everything finished (not awaited). */
  async tick(): Promise<void> {
    this.crowd.collect(Math.min(this.now(), this.leasesRunUntil ?? Infinity));
    if (this.dmx.length > 0) {
      const values = this.crowd.values();
      for (const u of this.dmx) u.crowd(values);
    }
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
    const now = this.now();
    if (now - this.lastErrorLog >= LOG_EVERY_MS) {
      this.lastErrorLog = now;
      this.log.error({ layoutId: this.settings.layoutId, err: e }, 'send tick failed');
    }
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
