// A layout's OSC targets as its send loop and its crowd sends use them: each target's transport,
// router and queue, and what both do with one: send datagrams and count them, count what its
// router drops, and log a failed send at most every 5 s.
import type { Logger } from '../runtime/log.js';
import type { BridgeCounters } from './counters.js';
import type { BooleanMode } from './osc.js';
import { Router, type RouteConfig, type Unrouted } from './routes.js';
import { UdpTarget, type OscTarget } from './sender.js';
import { TargetQueue, type Delivery } from './target-queue.js';
import { TcpTarget, type TcpFraming } from './tcp-target.js';

export const MAX_DATAGRAM_BYTES = 1400;
const LOG_EVERY_MS = 5000;

export interface TargetSettings {
  readonly host: string;
  readonly port: number;
  readonly booleans: BooleanMode;
  readonly routes?: readonly RouteConfig[];
  readonly unrouted?: Unrouted;
  readonly transport?: 'udp' | TcpFraming;
}

export interface TargetLane {
  /** the display, over UDP or TCP */
  target: OscTarget;
  booleans: BooleanMode;
  /** this target's addresses and values (bridge/routes.ts) */
  router: Router;
  queue: TargetQueue;
  /** the last batch sent, awaiting the next tick to learn whether the display refused it */
  unconfirmed: { ds: Delivery[]; refusals: number } | null;
}

export class TargetLanes {
  readonly all: TargetLane[];
  private lastErrorLog = 0;

  constructor(
    targets: readonly TargetSettings[],
    private readonly layoutId: string,
    private readonly counters: BridgeCounters,
    private readonly log: Logger,
    private readonly now: () => number,
  ) {
    this.all = targets.map((t) => ({ target: t.transport === undefined || t.transport === 'udp' ? new UdpTarget(t, now) : new TcpTarget(t, t.transport, now), booleans: t.booleans, router: new Router(t.routes, t.unrouted), queue: new TargetQueue(), unconfirmed: null }));
  }

  /** Sends datagrams to a target and counts them; a failure is counted and thrown for the caller to requeue. */
  async transmit(lane: TargetLane, datagrams: Buffer[], messages: number, bundles: number): Promise<void> {
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

  /** What a target's router makes; what it drops (unrouted: drop) is counted. */
  counted<T>(lane: TargetLane, route: () => T): T {
    const before = lane.router.dropped;
    const out = route();
    this.counters.target(lane.target.name).unrouted += lane.router.dropped - before;
    return out;
  }

  /** A send failed: logged, at most every LOG_EVERY_MS (the counters count each). */
  sendFailed(lane: TargetLane, err: string): void {
    if (!this.shouldLog()) return;
    this.log.warn({ target: lane.target.name, layoutId: this.layoutId, err }, 'send failed; retrying with backoff');
  }

  /** Whether an error may be logged now: the layout's send errors and tick errors share one pace. */
  shouldLog(): boolean {
    const now = this.now();
    if (now - this.lastErrorLog < LOG_EVERY_MS) return false;
    this.lastErrorLog = now;
    return true;
  }
}
