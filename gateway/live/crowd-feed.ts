// The crowd's values for the live channel. Every gateway process publishes each control's stored
// summaries to the layout's sharded channel (SPUBLISH, in the layout's hash slot; at most 4 a second
// per control and process). A process subscribes (SSUBSCRIBE) to a layout's channel only while it
// holds sockets on that layout, merges the newest summary of every process as the bridge does
// (schemas/crowd-merge.ts), and every TICK_MS hands the values that changed to the live channel:
// phones see the figure the displays get, at most 4 times a second per control. The team page's crowd
// view `peek`s a layout: it is listened to for PEEK_HOLD_MS after each look, sockets or none.
// A subscription is checked end to end: right after SSUBSCRIBE and every PROBE_EVERY_MS this process
// SPUBLISHes a probe on the channel; one not heard back within PROBE_TIMEOUT_MS means the
// subscription is not delivering (a cluster client's shard subscriber was replaced under it, for
// one), and the channel is subscribed again. Other processes ignore probes (they are no summary).
import { decodeCrowdSummary } from '../../schemas/action-entry.js';
import { CrowdTable, type CrowdValue } from '../../schemas/crowd-merge.js';
import type { RedisClient } from '../../runtime/redis.js';
import type { RedisKeys } from '../store/keys.js';
import { FRAME_LIMITS } from '../../schemas/live-protocol.js';

/** How often the merged values are looked at and the changed ones sent: 4 times a second. */
export const CROWD_TICK_MS = 1000 / FRAME_LIMITS.crowdFramesPerSecond;
/** How often a watched channel's subscription is checked, and how long its probe may take to come back. */
export const PROBE_EVERY_MS = 5000;
export const PROBE_TIMEOUT_MS = 1000;
const PROBE_START = '{"probe":"';
/** A layout the team page looked at is listened to this long after its last look. */
export const PEEK_HOLD_MS = 30_000;
/** A failed SSUBSCRIBE is tried again this much later (a repeat of one that did go through is harmless). */
const RESUBSCRIBE_MS = 500;

export interface CrowdFeedOptions {
  /** a subscribe or unsubscribe that failed (Redis away), or a subscription found deaf and made again: counted */
  onUnavailable: (what: string) => void;
  /** SPUBLISHes a probe on a channel (through a client that is not the subscriber) */
  probe: (channel: string, text: string) => Promise<unknown>;
  now: () => number;
}

interface Watched {
  layoutId: string;
  table: CrowdTable;
  sockets: boolean;
  peekUntil: number;
  /** the probe in flight (null: none), and when the last one was sent */
  probe: string | null;
  probedAt: number;
}

export class CrowdFeed {
  /** the layouts watched, by channel: their merged tables, whether sockets hold them, until when the team page does, and the subscription's check */
  private readonly tables = new Map<string, Watched>();
  private probes = 0;
  private timer: NodeJS.Timeout | null = null;
  /** told of the values of a layout that changed (or ran out) since the last tick: the live channel, once it follows */
  private onChanged: (layoutId: string, values: CrowdValue[]) => void = () => {};

  constructor(
    private readonly subscriber: RedisClient,
    private readonly keys: RedisKeys,
    private readonly o: CrowdFeedOptions,
  ) {
    subscriber.on('smessage', (channel: string, text: string) => {
      const watched = this.tables.get(channel);
      if (watched && text.startsWith(PROBE_START)) {
        if (text === watched.probe) watched.probe = null; // heard back: the subscription delivers
        return;
      }
      const summary = watched && decodeCrowdSummary(text);
      if (summary && summary.layoutId === watched.layoutId) watched.table.offer(summary);
    });
  }

  /** Starts listening to a layout's crowd (its first socket here). */
  watch(layoutId: string): void {
    this.hold(layoutId).sockets = true;
  }

  /** The layout's crowd now, for the team page: listened to from now until PEEK_HOLD_MS after the last look (the first look may be empty). */
  peek(layoutId: string): CrowdValue[] {
    const held = this.hold(layoutId);
    held.peekUntil = this.o.now() + PEEK_HOLD_MS;
    return held.table.current();
  }

  private hold(layoutId: string) {
    const channel = this.keys.liveChannel(layoutId);
    let held = this.tables.get(channel);
    if (!held) {
      this.tables.set(channel, (held = { layoutId, table: new CrowdTable(), sockets: false, peekUntil: 0, probe: null, probedAt: -Infinity }));
      this.subscribe(channel);
      this.timer ??= setInterval(() => this.tick(), CROWD_TICK_MS);
    }
    return held;
  }

  /** SSUBSCRIBE, tried again every RESUBSCRIBE_MS while the layout is watched (Redis away, a cluster's subscriber not ready); then checked by a probe. */
  private subscribe(channel: string): void {
    this.subscriber.ssubscribe(channel).then(
      () => {
        const held = this.tables.get(channel);
        if (held) this.sendProbe(channel, held, this.o.now());
      },
      () => {
        this.o.onUnavailable('live_crowd_subscribe');
        setTimeout(() => this.tables.has(channel) && this.subscribe(channel), RESUBSCRIBE_MS).unref();
      },
    );
  }

  private sendProbe(channel: string, held: Watched, now: number): void {
    held.probe = `${PROBE_START}${process.pid}.${++this.probes}"}`;
    held.probedAt = now;
    this.o.probe(channel, held.probe).catch(() => {
      held.probe = null; // Redis away: nothing was sent, so nothing to wait for
      this.o.onUnavailable('live_crowd_probe');
    });
  }

  /** A probe not heard back in time: the subscription is made again; one due is sent. */
  private checkSubscription(channel: string, held: Watched, now: number): void {
    if (held.probe !== null && now - held.probedAt >= PROBE_TIMEOUT_MS) {
      held.probe = null;
      held.probedAt = now;
      this.o.onUnavailable('live_crowd_resubscribe');
      this.subscriber
        .sunsubscribe(channel)
        .catch(() => this.o.onUnavailable('live_crowd_unsubscribe'))
        .finally(() => this.tables.get(channel) === held && this.subscribe(channel));
    } else if (held.probe === null && now - held.probedAt >= PROBE_EVERY_MS) this.sendProbe(channel, held, now);
  }

  /** Its last socket here left: the layout's crowd is no longer listened to, unless the team page looks at it. */
  unwatch(layoutId: string): void {
    const held = this.tables.get(this.keys.liveChannel(layoutId));
    if (!held) return;
    held.sockets = false;
    if (held.peekUntil <= this.o.now()) this.drop(this.keys.liveChannel(layoutId));
  }

  private drop(channel: string): void {
    if (!this.tables.delete(channel)) return;
    this.subscriber.sunsubscribe(channel).catch(() => this.o.onUnavailable('live_crowd_unsubscribe'));
    if (this.tables.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  /** The crowd's values on a layout now (for a socket that just opened, or caught up). */
  current(layoutId: string): CrowdValue[] {
    return this.tables.get(this.keys.liveChannel(layoutId))?.table.current() ?? [];
  }

  /** Who is told of each layout's changed values (the live channel's sockets). */
  follow(onChanged: (layoutId: string, values: CrowdValue[]) => void): void {
    this.onChanged = onChanged;
  }

  private tick(): void {
    const now = this.o.now();
    for (const [channel, held] of this.tables) {
      const { layoutId, table, sockets, peekUntil } = held;
      if (!sockets && peekUntil <= now) {
        this.drop(channel);
        continue;
      }
      this.checkSubscription(channel, held, now);
      const changed = table.changed(now);
      if (changed.length > 0) this.onChanged(layoutId, changed);
    }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.tables.clear();
    this.subscriber.disconnect();
  }
}
