// One DMX target of a layout: a universe of 512 channels sent at a steady rate (rateHz, drift
// corrected), whatever changed. Each route has a goal (dmx-routes.ts) and moves its channels toward
// it by at most its slew a second; a pulse holds its value, then goes back to rest. A crowd or zone
// route whose control has had no crowd summary for staleMs (the gateways stopped, the bridge cut off
// from Redis, no one left in the crowd) is stale: it holds, fades to its fallback over fadeMs, or is
// released. A universe whose routes are all released is no longer sent (an sACN source's last three
// frames say Stream_Terminated), so the receiver's merge hands its channels to the desk; it is sent
// again when a summary comes. On stop every route goes to its fallback, which is sent, and then the
// source ends. The target is up while its frames go out.
import type { CrowdValue } from '../../schemas/crowd-merge.js';
import type { ActionEntry } from '../../schemas/types.js';
import { TickLoop } from '../tick-loop.js';
import { actionAsk, channelsOf, crowdGoal, kindOf, press, topOf, type Ask, type DmxRouteConfig, type RouteKind } from './dmx-routes.js';

/** Frames sent with Stream_Terminated (E1.31 6.2.6 asks for three), and with the fallbacks before them on stop. */
const LAST_FRAMES = 3;

/** What sends a universe's channels (framing.ts DmxWire). */
export interface UniverseOut {
  send(channels: Uint8Array, terminated?: boolean): Promise<void>;
  close(): void;
}

export interface DmxLaneSettings {
  /** the target's name in metrics and logs (sacn:1, artnet:0.0.1, with @address when unicast) */
  name: string;
  /** sacn ends a released or stopped source with Stream_Terminated frames; artnet just stops */
  terminates: boolean;
  rateHz: number;
  staleMs: number;
  routes: readonly DmxRouteConfig[];
}

export interface DmxCounters {
  frames: number;
  /** channel values that differ from the frame before */
  channelsChanged: number;
  /** crowd routes that went stale (each time one did) */
  staleHolds: number;
  sendErrors: number;
}

interface Level {
  route: DmxRouteConfig;
  kind: RouteKind;
  top: number;
  /** where the channels are, and where they go (DMX units of the route) */
  current: number;
  goal: number;
  /** a pulse: its value until then (local ms), then rest */
  pulseUntil: number;
  /** stale now, and since when (the fade's start) */
  stale: boolean;
  fadeFrom: number;
  fadeAt: number;
}

export class DmxLane {
  private readonly levels: Level[];
  private readonly byLid = new Map<number, Level[]>();
  private readonly channels = new Uint8Array(512);
  private readonly previous = new Uint8Array(512);
  private readonly lastSummaryAt = new Map<number, number>();
  private readonly loop: TickLoop;
  private lastFrameAt = 0;
  /** released: no frames go out; the terminated frames still owed */
  private released = false;
  private terminatedOwed = 0;
  private sendOk = false;
  readonly counters: DmxCounters = { frames: 0, channelsChanged: 0, staleHolds: 0, sendErrors: 0 };

  constructor(
    readonly s: DmxLaneSettings,
    private readonly out: UniverseOut,
    /** the deployment's clock (Redis's): summaries' freshness */
    private readonly now: () => number,
    private readonly onError: (e: unknown) => void = () => {},
  ) {
    this.levels = s.routes.map((route) => {
      const kind = kindOf(route);
      const start = kind === 'crowd' ? (route.fallback ?? 0) : (route.rest ?? route.off ?? 0);
      return { route, kind, top: topOf(route), current: start, goal: start, pulseUntil: 0, stale: kind === 'crowd', fadeFrom: start, fadeAt: 0 };
    });
    for (const l of this.levels) this.byLid.set(l.route.lid, [...(this.byLid.get(l.route.lid) ?? []), l]);
    this.released = this.allReleased();
    this.loop = new TickLoop(s.rateHz, () => this.frame(), { late: () => {}, failed: (e) => this.onError(e), now: Date.now });
  }

  get name(): string {
    return this.s.name;
  }

  /** Sending frames, and the last went out. */
  up(): boolean {
    return !this.released && this.sendOk;
  }

  /** A plain action of a control routed here. */
  action(e: Pick<ActionEntry, 'lid' | 'type' | 'value'>): void {
    for (const l of this.byLid.get(e.lid) ?? []) if (l.kind === 'action') this.apply(l, actionAsk(l.route, e));
  }

  /** A crowd cue fired. */
  cue(lid: number): void {
    for (const l of this.byLid.get(lid) ?? []) if (l.kind === 'cue') this.apply(l, press(l.route));
  }

  /** A crowd summary of the control came (its routes are fresh again). */
  summary(lid: number): void {
    this.lastSummaryAt.set(lid, this.now());
  }

  /** The layout's merged crowd values now. */
  crowd(values: readonly CrowdValue[]): void {
    for (const v of values) {
      for (const l of this.byLid.get(v.lid) ?? []) {
        if (l.kind !== 'crowd' || l.stale) continue;
        const goal = crowdGoal(l.route, v);
        if (goal !== null) l.goal = goal;
      }
    }
  }

  private apply(l: Level, ask: Ask): void {
    if (!ask) return;
    if ('goal' in ask) {
      l.goal = ask.goal;
      l.pulseUntil = 0;
    } else {
      l.goal = ask.pulse;
      l.pulseUntil = Date.now() + ask.ms;
    }
  }

  private allReleased(): boolean {
    return this.levels.length > 0 && this.levels.every((l) => l.kind === 'crowd' && l.stale && (l.route.stale ?? 'hold') === 'release');
  }

  /** Stale or fresh, for each crowd route now. */
  private judge(): void {
    const now = this.now();
    for (const l of this.levels) {
      if (l.kind !== 'crowd') continue;
      const at = this.lastSummaryAt.get(l.route.lid);
      const stale = at === undefined || now - at > this.s.staleMs;
      if (stale && !l.stale) {
        this.counters.staleHolds++;
        l.fadeFrom = l.current;
        l.fadeAt = Date.now();
      }
      l.stale = stale;
    }
  }

  /** Where a route's channels are this frame. */
  private advance(l: Level, at: number, dt: number): number {
    if (l.pulseUntil > 0 && at >= l.pulseUntil) {
      l.pulseUntil = 0;
      l.goal = l.route.rest ?? 0;
    }
    if (l.stale) {
      const policy = l.route.stale ?? 'hold';
      const fallback = l.route.fallback ?? 0;
      if (policy === 'release') return (l.current = fallback); // sent only while other routes keep the universe
      if (policy === 'fade') {
        const t = l.route.fadeMs ? Math.min(1, (at - l.fadeAt) / l.route.fadeMs) : 1;
        l.goal = fallback;
        return (l.current = l.fadeFrom + (fallback - l.fadeFrom) * t);
      }
      return l.current; // hold
    }
    if (l.route.slew === undefined) return (l.current = l.goal);
    const step = ((l.route.slew * l.top) / 255) * (dt / 1000);
    const d = l.goal - l.current;
    return (l.current = Math.abs(d) <= step ? l.goal : l.current + Math.sign(d) * step);
  }

  private write(l: Level, v: number): void {
    const x = Math.round(Math.min(l.top, Math.max(0, v)));
    const [coarse, fine] = channelsOf(l.route);
    if (fine === undefined) this.channels[coarse! - 1] = x;
    else {
      this.channels[coarse! - 1] = x >> 8;
      this.channels[fine - 1] = x & 0xff;
    }
  }

  /** One frame: the routes moved, the universe sent (or, released, not). */
  async frame(): Promise<void> {
    const at = Date.now();
    const dt = this.lastFrameAt === 0 ? 0 : at - this.lastFrameAt;
    this.lastFrameAt = at;
    this.judge();
    for (const l of this.levels) this.write(l, this.advance(l, at, dt));
    const released = this.allReleased();
    if (released && !this.released) this.terminatedOwed = this.s.terminates ? LAST_FRAMES : 0;
    this.released = released;
    if (released && this.terminatedOwed === 0) return;
    const terminated = released && this.terminatedOwed-- > 0;
    await this.send(terminated);
  }

  private async send(terminated: boolean): Promise<void> {
    let changed = 0;
    for (let i = 0; i < 512; i++) if (this.channels[i] !== this.previous[i]) changed++;
    try {
      await this.out.send(this.channels, terminated);
      this.sendOk = !terminated;
      this.counters.frames++;
      this.counters.channelsChanged += changed;
      this.previous.set(this.channels);
    } catch (e) {
      this.sendOk = false;
      this.counters.sendErrors++;
      this.onError(e);
    }
  }

  start(): void {
    this.loop.start();
  }

  /** Stops: every route's fallback is sent, then (sACN) the source ends with Stream_Terminated. */
  async stop(): Promise<void> {
    await this.loop.stop();
    for (const l of this.levels) this.write(l, l.route.fallback ?? 0);
    const period = 1000 / this.s.rateHz;
    for (let i = 0; i < LAST_FRAMES; i++) {
      await this.send(false);
      await new Promise((r) => setTimeout(r, period));
    }
    if (this.s.terminates) for (let i = 0; i < LAST_FRAMES; i++) await this.send(true);
    this.released = true;
    this.out.close();
  }
}
