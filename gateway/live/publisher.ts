// The publisher of pages, crowd values and light looks to live sockets. A socket gets the layout's
// active page first (then the crowd's values on it, and its zone's current light look) and joins
// the layout's uWS topic and its zone's light topics; from then on a page switch or re-import, each
// crowd change and each look, is one publish on a topic (uWS writes it to every
// socket in C++). A socket behind on its buffer is off the topic and gets the current state when
// it drains (backpressure.ts).
import type { TemplatedApp } from 'uWebSockets.js';
import type { CrowdValue } from '../../schemas/crowd-merge.js';
import { CLOSE } from '../../schemas/live-protocol.js';
import { revokedByLayout } from '../auth/token-claims.js';
import { AppError } from '../errors.js';
import type { LiveLayout } from '../layouts/layout-cache.js';
import { lightTopicOf, lightTopicsOf, topicOf, type Backpressure } from './backpressure.js';
import { crowdFrame, crowdLids, pageFrame } from './frames.js';
import type { SocketRegistry } from './registry.js';
import type { LiveOptions, LiveServices, LiveSocket, SocketData } from './socket.js';

export class Publisher {
  private app: TemplatedApp | null = null;
  /** the version of each layout whose page was last published to its sockets */
  private readonly published = new Map<string, number>();

  constructor(
    private readonly s: Pick<LiveServices, 'layouts' | 'destinations'>,
    /** the crowd's current values on a layout (none: no crowd frames) */
    private readonly crowdNow: (layoutId: string) => readonly CrowdValue[],
    /** the light frames a socket of a zone gets now: its zone's current look (none: no canvas, or nothing lit yet) */
    private readonly lightNow: (layoutId: string, zone: string) => readonly string[],
    private readonly registry: SocketRegistry,
    private readonly backpressure: Backpressure,
    private readonly o: Pick<LiveOptions, 'onError' | 'onUnavailable'>,
  ) {}

  mount(app: TemplatedApp): void {
    this.app = app;
  }

  /** The layout has no socket here any more. */
  left(layoutId: string): void {
    this.published.delete(layoutId);
  }

  private destinations(layoutId: string): Promise<number> {
    return this.s.destinations.count(layoutId).catch(() => {
      this.o.onUnavailable('live_destination_count');
      return 0; // the page still goes out: the count is a hint
    });
  }

  /**
   * The layout's active page, as GET /layout answers it, with its version, then the crowd's values
   * on it; then the socket joins its layout's topic.
   */
  async sendPage(ws: LiveSocket, data: SocketData): Promise<void> {
    if (!data.open) return;
    try {
      const layout = await this.s.layouts.get(data.layoutId);
      if (!data.open) return;
      if (!layout) return this.registry.end(ws, data, CLOSE.layoutGone, 'the layout is gone');
      // revoked after its upgrade was let in: a layout change the socket was not yet there for
      if (revokedByLayout(data.claims, layout)) return this.registry.end(ws, data, CLOSE.tokenInvalid, 'token_revoked');
      const destinationCount = await this.destinations(data.layoutId);
      if (!data.open || data.overSince !== null) return; // it catches up when it drains
      const lids = crowdLids(layout);
      ws.cork(() => {
        if (!this.backpressure.sendState(ws, data, pageFrame(layout, destinationCount))) return;
        data.version = layout.version;
        for (const v of this.crowdNow(data.layoutId)) if (lids.has(v.lid) && !this.backpressure.sendState(ws, data, crowdFrame(v))) return;
        for (const text of this.lightNow(data.layoutId, data.claims.zone)) if (!this.backpressure.sendState(ws, data, text)) return;
        // in step: from now on the layout's page, crowd and light frames reach it by the layout's topics
        if (data.overSince !== null) return;
        ws.subscribe(topicOf(data.layoutId));
        for (const topic of lightTopicsOf(data.layoutId, data.claims.zone)) ws.subscribe(topic);
      });
      // a page published between the read above and the subscription: this one missed it
      const now = await this.s.layouts.get(data.layoutId);
      if (now && now.version !== data.version && data.open && data.overSince === null) void this.sendPage(ws, data);
    } catch (e) {
      this.failed(e, 'live_page');
    }
  }

  /** The crowd's values on a layout changed: those on its live page are published to its sockets in step. */
  crowdChanged(layoutId: string, values: readonly CrowdValue[]): void {
    if (!this.registry.hasLayout(layoutId)) return;
    const fan = (layout: LiveLayout | null) => {
      if (!layout) return;
      const lids = crowdLids(layout);
      const texts = values.filter((v) => lids.has(v.lid)).map(crowdFrame);
      if (texts.length > 0) this.publish(layoutId, texts);
    };
    const layout = this.s.layouts.get(layoutId);
    if (layout instanceof Promise) layout.then(fan, (e: unknown) => this.failed(e, 'live_crowd'));
    else fan(layout);
  }

  /** A zone's new light look (zone *: every zone's) to its sockets in step, by one publish on its topic. */
  lightLook(layoutId: string, zone: string, text: string): void {
    if (!this.app || !this.registry.hasLayout(layoutId)) return;
    this.backpressure.beforePublish(this.registry.ofLayout(layoutId), 1);
    this.app.publish(lightTopicOf(layoutId, zone), text);
  }

  /** A layout's new page (and its crowd's values) to every socket in step, by one publish on its topic. */
  async publishPage(layout: LiveLayout): Promise<void> {
    if ((this.published.get(layout.layoutId) ?? -1) >= layout.version) return;
    const destinationCount = await this.destinations(layout.layoutId);
    if (!this.app || (this.published.get(layout.layoutId) ?? -1) >= layout.version) return;
    this.published.set(layout.layoutId, layout.version);
    const lids = crowdLids(layout);
    this.publish(layout.layoutId, [pageFrame(layout, destinationCount), ...this.crowdNow(layout.layoutId).filter((v) => lids.has(v.lid)).map(crowdFrame)]);
  }

  /**
   * State frames to every socket of a layout in step, by one publish each on its topic (uWS writes
   * them in C++, batched per socket). A socket over its buffer leaves the topic first, so it is
   * known to have skipped them (uWS itself would drop them past maxBackpressure without telling).
   */
  private publish(layoutId: string, texts: readonly string[]): void {
    if (!this.app || !this.registry.hasLayout(layoutId)) return;
    this.backpressure.beforePublish(this.registry.ofLayout(layoutId), texts.length);
    for (const text of texts) this.app.publish(topicOf(layoutId), text);
  }

  /** Redis away (an AppError) is counted; anything else is a bug, logged. */
  failed(e: unknown, what: string): void {
    if (e instanceof AppError) this.o.onUnavailable(what);
    else this.o.onError(e);
  }
}
