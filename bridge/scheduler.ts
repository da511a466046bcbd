// One layout's send loop. Entries offered by the consumer wait in one queue per target; on every
// tick (tickHz, drift-corrected) each target gets at most `maxMessagesPerTick` due messages as
// OSC bundles packed into datagrams of at most 1,400 bytes, timetagged with the gateway receive
// time plus playoutDelayMs (or "immediately"). A sent batch is confirmed on the next tick unless
// the display refused it meanwhile (then it is sent again after a backoff). An entry is acked
// once every target has confirmed it, coalesced it away, or dropped it as stale.
import { LRUCache } from 'lru-cache';
import type { ActionEntry } from '../schemas/types.js';
import type { BridgeCounters } from './counters.js';
import type { Logger } from './log.js';
import { encodeMessage, packDatagrams, timetag, toOscMessage, type BooleanMode, type TimedGroup } from './osc.js';
import { UdpTarget } from './sender.js';
import { TargetQueue, type Delivery } from './target-queue.js';

export const MAX_DATAGRAM_BYTES = 1400;

export interface LayoutSettings {
  layoutId: string;
  tickHz: number;
  playoutDelayMs: number;
  maxAgeMs: number;
  maxMessagesPerTick: number;
  targets: readonly { readonly host: string; readonly port: number; readonly booleans: BooleanMode }[];
}

interface TargetLane {
  udp: UdpTarget;
  booleans: BooleanMode;
  queue: TargetQueue;
  /** the last batch sent, awaiting the next tick to learn whether the display refused it */
  unconfirmed: { ds: Delivery[]; refusals: number } | null;
}

export class LayoutScheduler {
  private readonly lanes: TargetLane[];
  private readonly queued = new Map<string, Delivery>();
  private readonly done = new LRUCache<string, true>({ max: 100_000 });
  private toAck: string[] = [];
  private running = false;
  private loop: Promise<void> | null = null;
  private lastErrorLog = 0;
  /** last time the tick loop completed a tick (for the watchdog) */
  lastProgress = 0;

  constructor(
    readonly settings: LayoutSettings,
    private readonly ack: (streamIds: string[]) => Promise<void>,
    private readonly counters: BridgeCounters,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.lanes = settings.targets.map((t) => ({ udp: new UdpTarget(t, now), booleans: t.booleans, queue: new TargetQueue(), unconfirmed: null }));
  }

  get targetNames(): string[] {
    return this.lanes.map((l) => l.udp.name);
  }

  /** The longest target queue: the consumer stops reading while it is large (backpressure). */
  backlog(): number {
    return Math.max(0, ...this.lanes.map((l) => l.queue.length + (l.unconfirmed?.ds.length ?? 0)));
  }

  /** Takes a decoded stream entry. An action id already handled is acked at once; one still queued is not queued twice. */
  offer(streamId: string, entry: ActionEntry): void {
    const pending = this.queued.get(entry.id);
    if (pending) {
      if (pending.streamId !== streamId && !pending.alsoAck.includes(streamId)) {
        pending.alsoAck.push(streamId);
        this.counters.duplicates++;
      }
      return;
    }
    if (this.done.has(entry.id)) {
      this.counters.duplicates++;
      this.toAck.push(streamId);
      return;
    }
    const d: Delivery = { streamId, entry, remaining: this.lanes.length, alsoAck: [] };
    this.queued.set(entry.id, d);
    for (const lane of this.lanes) {
      const superseded = lane.queue.push(d);
      if (superseded) {
        this.counters.coalesced++;
        this.finish(superseded);
      }
    }
  }

  private finish(d: Delivery): void {
    if (--d.remaining > 0) return;
    this.queued.delete(d.entry.id);
    this.done.set(d.entry.id, true);
    this.toAck.push(d.streamId, ...d.alsoAck);
  }

  private encoded(d: Delivery, mode: BooleanMode): Buffer {
    d.encoded ??= {};
    return (d.encoded[mode] ??= encodeMessage(toOscMessage(d.entry, mode)));
  }

  /** Consecutive deliveries with the same play-out time (null: immediately) form one group. */
  private groups(ds: Delivery[], mode: BooleanMode): TimedGroup[] {
    const groups: TimedGroup[] = [];
    let lastAt: number | null | undefined;
    for (const d of ds) {
      const at = this.settings.playoutDelayMs > 0 ? d.entry.ts + this.settings.playoutDelayMs : null;
      const last = groups[groups.length - 1];
      if (last && at === lastAt) last.messages.push(this.encoded(d, mode));
      else groups.push({ timetag: timetag(at), messages: [this.encoded(d, mode)] });
      lastAt = at;
    }
    return groups;
  }

  /** Settles the previous batch: refused -> back in the queue (sent again after the backoff), else done. */
  private settle(lane: TargetLane): void {
    const batch = lane.unconfirmed;
    if (!batch) return;
    lane.unconfirmed = null;
    if (lane.udp.refusals > batch.refusals) {
      this.counters.target(lane.udp.name).sendErrors++;
      lane.queue.requeue(batch.ds);
      this.logSendError(lane, 'the display refused the datagrams (ECONNREFUSED)');
    } else {
      lane.udp.confirmed();
      for (const d of batch.ds) this.finish(d);
    }
  }

  private logSendError(lane: TargetLane, err: string): void {
    const now = this.now();
    if (now - this.lastErrorLog < 5000) return;
    this.lastErrorLog = now;
    this.log.warn({ target: lane.udp.name, layoutId: this.settings.layoutId, err }, 'send failed; retrying with backoff');
  }

  private async sendLane(lane: TargetLane): Promise<void> {
    this.settle(lane);
    const { send, coalesced } = lane.queue.take(this.settings.maxMessagesPerTick);
    for (const d of coalesced) this.finish(d);
    const now = this.now();
    const fresh: Delivery[] = [];
    for (const d of send) {
      if (now - d.entry.ts > this.settings.maxAgeMs) {
        this.counters.droppedStale++;
        this.finish(d);
      } else fresh.push(d);
    }
    if (fresh.length === 0) return;
    if (!lane.udp.ready()) {
      lane.queue.requeue(fresh);
      return;
    }
    const groups = this.groups(fresh, lane.booleans);
    const { datagrams, bundles } = packDatagrams(groups, MAX_DATAGRAM_BYTES);
    const c = this.counters.target(lane.udp.name);
    const refusals = lane.udp.refusals;
    try {
      await lane.udp.send(datagrams);
      c.messages += fresh.length;
      c.bundles += bundles;
      c.datagrams += datagrams.length;
      c.bytes += datagrams.reduce((n, d) => n + d.length, 0);
      this.counters.sent += fresh.length;
      lane.unconfirmed = { ds: fresh, refusals };
    } catch (e) {
      c.sendErrors++;
      lane.queue.requeue(fresh);
      this.logSendError(lane, (e as Error).message);
    }
  }

  /** One tick: every target's due messages, then one XACK for everything finished. */
  async tick(): Promise<void> {
    await Promise.all(this.lanes.map((l) => this.sendLane(l)));
    await this.flushAcks();
    this.lastProgress = this.now();
  }

  private async flushAcks(): Promise<void> {
    if (this.toAck.length > 0) {
      const ids = this.toAck;
      this.toAck = [];
      try {
        await this.ack(ids);
        this.counters.acked += ids.length;
      } catch {
        this.toAck.push(...ids); // Redis away: ack on a later tick
      }
    }
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    const period = 1000 / this.settings.tickHz;
    const started = performance.now();
    let n = 0;
    this.loop = (async () => {
      while (this.running) {
        const due = started + ++n * period;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        else n += Math.floor(-wait / period); // overran: skip the missed ticks instead of bursting
        if (!this.running) break;
        this.counters.recordLateness(Math.max(0, performance.now() - due));
        await this.tick();
      }
    })();
  }

  /** Stops ticking after sending what is queued (at most `drainMs`), and acks it. */
  async stop(drainMs = 2000): Promise<void> {
    this.running = false;
    await this.loop;
    const until = this.now() + drainMs;
    while ((this.backlog() > 0 || this.toAck.length > 0) && this.now() < until) {
      await this.tick();
      await new Promise((r) => setTimeout(r, 1000 / this.settings.tickHz)); // paced, as while running
    }
    // Out of time with a batch still unconfirmed: settle it (acked unless refused by now).
    for (const l of this.lanes) this.settle(l);
    await this.flushAcks();
    for (const l of this.lanes) l.udp.close();
  }
}
