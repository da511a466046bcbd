// The live channel's uWS mount: GET /live upgrades to a WebSocket on which a phone sees what is live
// and acts (the protocol: schemas/live-protocol.ts). This file only wires the parts, each a file of
// its own: admission before the upgrade (admission.ts, upgrade.ts), the sockets by layout and
// participant with the drain (registry.ts), backpressure (backpressure.ts), pages, crowd values and
// light looks (publisher.ts; the looks are read by light-feed.ts), the token's life on an open socket (token-lifecycle.ts), and the frames a client
// sends (action-frames.ts).
import type { TemplatedApp } from 'uWebSockets.js';
import type { CrowdValue } from '../../schemas/crowd-merge.js';
import { CLOSE } from '../../schemas/live-protocol.js';
import { revokedByLayout, sameRevocations } from '../auth/token-claims.js';
import type { LiveLayout } from '../layouts/layout-cache.js';
import type { CrowdFeed } from './crowd-feed.js';
import type { LightFeed } from './light-feed.js';
import { ActionFrames } from './action-frames.js';
import { Admission } from './admission.js';
import { Backpressure } from './backpressure.js';
import { Publisher } from './publisher.js';
import { SocketRegistry } from './registry.js';
import type { LiveOptions, LiveServices, LiveSocket, SocketData } from './socket.js';
import { TokenLifecycle } from './token-lifecycle.js';
import { upgradeLive } from './upgrade.js';
import { clockSnapshot } from './clock-reports.js';
import { clientAddress } from '../http/client-address.js';

export type { LiveOptions, LiveServices } from './socket.js';
export { FLOOD_CLOSE_AFTER } from './action-frames.js';

/** Answers may fill a socket's buffer to this many times LIVE_BUFFER_BYTES (1 MiB by default). */
const ANSWER_BUFFER_FACTOR = 64;

export class LiveChannel {
  private readonly registry: SocketRegistry;
  private readonly admission: Admission;
  private readonly backpressure: Backpressure;
  private readonly publisher: Publisher;
  private readonly frames: ActionFrames;
  private readonly lifecycle: TokenLifecycle;
  /** each layout's revocations its sockets were last checked against */
  private readonly checked = new Map<string, Pick<LiveLayout, 'tokensRevokedBefore' | 'revokedSubs'>>();
  /** true while an upgrade completed after an await runs (its socket's close then is uWS's own) */
  private inUpgrade = false;

  constructor(
    private readonly s: LiveServices,
    /** the crowd's values, merged over every gateway process (null: no crowd frames) */
    private readonly crowd: CrowdFeed | null,
    private readonly o: LiveOptions,
    /** the looks of layouts' light canvases (null: no light frames) */
    private readonly light: LightFeed | null = null,
  ) {
    this.registry = new SocketRegistry(o.socketsPerParticipant, {
      // the first socket on the layout here: its crowd is listened to, its looks read
      layoutWatched: (layoutId) => {
        this.crowd?.watch(layoutId);
        this.watchLight(layoutId);
      },
      layoutLeft: (layoutId) => {
        this.publisher.left(layoutId);
        this.checked.delete(layoutId);
        this.crowd?.unwatch(layoutId);
        this.light?.unwatch(layoutId);
      },
      closedByUs: (code) => o.onClosed?.(code),
    });
    this.admission = new Admission(o, () => this.registry.size);
    this.backpressure = new Backpressure(this.registry, o);
    this.publisher = new Publisher(
      s,
      (layoutId) => this.crowd?.current(layoutId) ?? [],
      (layoutId, zone) => this.light?.current(layoutId, zone) ?? [],
      this.registry,
      this.backpressure,
      o,
    );
    this.frames = new ActionFrames(s, this.registry, () => this.lifecycle, o);
    // the channel follows what feeds it: the crowd's values, the light's looks, and the claims, which ask after its sockets
    crowd?.follow((layoutId, values) => this.crowdChanged(layoutId, values));
    light?.follow(this);
    s.claims?.attachSockets(this);
    this.lifecycle = new TokenLifecycle(
      this.registry,
      s,
      (ws, data, text) => ws.cork(() => this.frames.answer(ws, data, text)),
      (ws, data, e) => ws.cork(() => this.frames.refused(ws, data, null, e, true)),
      o,
    );
  }

  /** Sockets open on this process now. */
  get sockets(): number {
    return this.registry.size;
  }

  mount(app: TemplatedApp): void {
    this.publisher.mount(app);
    app.ws<SocketData>('/live', {
      maxPayloadLength: this.o.maxFrameBytes,
      idleTimeout: this.o.idleTimeoutSeconds,
      sendPingsAutomatically: true,
      // answers (ack, error) pass the state frames' limit, behind a large page on a slow network too:
      // past this uWS drops a send, and the socket is closed (CLOSE.tooSlow)
      maxBackpressure: ANSWER_BUFFER_FACTOR * this.o.bufferBytes,
      closeOnBackpressureLimit: false,
      drain: (ws) => {
        const data = ws.getUserData();
        if (this.backpressure.drained(ws, data)) void this.publisher.sendPage(ws, data); // the current page and crowd, then its topic again
      },
      upgrade: (res, req, context) =>
        upgradeLive(res, req, context, {
          deps: this.s,
          admit: () => this.admission.process(),
          admitNew: () => this.admission.newSocket(),
          address: (res, req) => clientAddress(Buffer.from(res.getRemoteAddressAsText()).toString(), req.getHeader('x-forwarded-for'), this.o.trustProxy),
          admitAddress: (address) => this.admission.address(address),
          refusedFrom: (address) => this.admission.refused(address),
          admitParticipant: (claims) => this.admission.participant(claims),
          newSocket: (claims, layoutId) => ({ claims, noticeSent: false, layoutId, version: -1, open: true, refusedInARow: 0, refreshing: false, refreshes: null, pongAt: -Infinity, times: null, clockMs: null, overSince: null, stale: false, answers: [] }),
          onError: this.o.onError,
          upgrading: (run) => {
            this.inUpgrade = true;
            try {
              run();
            } finally {
              this.inUpgrade = false;
            }
          },
        }),
      open: (ws) => this.opened(ws),
      message: (ws, message, isBinary) => this.frames.received(ws, ws.getUserData(), message, isBinary),
      close: (ws, code) => this.closed(ws, code),
    });
  }

  private opened(ws: LiveSocket): void {
    const data = ws.getUserData();
    this.registry.add(ws, data);
    // this process holds the participant now: its sockets on other processes close (CLOSE.replaced),
    // unless a socket that opened later holds it there (then this, the older, closes), and past its
    // opens a minute over every process the newest closes (CLOSE.flooding)
    this.s.claims?.opened(data.layoutId, data.claims.sub).then(
      ({ opens, older }) => {
        if (older) this.registry.end(ws, data, CLOSE.replaced, 'a newer socket of this participant took its place');
        else if (opens > this.o.opensPerParticipantPerMinute) this.registry.end(ws, data, CLOSE.flooding, 'this participant opened too many live sockets lately');
      },
      (e: unknown) => this.o.onError(e),
    );
    // Not from inside this handler: it runs within the upgrade's cork, and a send from a promise
    // settled here (a cached layout) raced the upgrade and lost the socket (1006).
    setImmediate(() => void this.publisher.sendPage(ws, data));
  }

  private closed(ws: LiveSocket, code: number): void {
    const data = ws.getUserData();
    // closed by uWS inside the corked asynchronous upgrade itself (upgrade.ts): not a client that left,
    // whose close comes from a later I/O event
    if (code === 1006 && this.inUpgrade) this.o.onLostAtUpgrade?.();
    this.backpressure.forget(ws);
    this.registry.remove(ws, data);
  }

  /** This process's sockets per layout and zone, counted by their clock uncertainty (clock-reports.ts). */
  clockSnapshots(): Map<string, Record<string, number[]>> {
    return new Map(this.registry.layouts().map((l) => [l, clockSnapshot([...this.registry.ofLayout(l)].map(([, data]) => data))]));
  }

  /** The layouts this process holds sockets of. */
  layouts(): string[] {
    return this.registry.layouts();
  }

  /** Whether sockets of the layout are open on this process. */
  holds(layoutId: string): boolean {
    return this.registry.hasLayout(layoutId);
  }

  /** Its looks are read while the layout has a light canvas (its first socket here, a re-import). */
  private watchLight(layoutId: string): void {
    this.light?.watch(layoutId).catch((e: unknown) => this.publisher.failed(e, 'live_light'));
  }

  /** A zone's new light look (zone *: every zone's), as its frame's text: to the zone's sockets. */
  lightLook(layoutId: string, zone: string, text: string): void {
    this.publisher.lightLook(layoutId, zone, text);
  }

  /** Whether the participant holds a socket of the layout on this process. */
  hasParticipant(layoutId: string, sub: string): boolean {
    return this.registry.hasParticipant(layoutId, sub);
  }

  /** Another process opened a socket of the participant: its sockets here close with CLOSE.replaced. */
  replaced(layoutId: string, sub: string): void {
    this.registry.endParticipant(layoutId, sub, CLOSE.replaced, 'a newer socket of this participant took its place');
  }

  /** The crowd's values on a layout changed: those on its live page go to its sockets. */
  crowdChanged(layoutId: string, values: readonly CrowdValue[]): void {
    this.publisher.crowdChanged(layoutId, values);
  }

  /**
   * A layout changed (page switch, re-import, revocations, gone): each of its sockets gets the new
   * page, or is closed. Its sockets are looked at one by one only when the layout is gone or its
   * revocations changed: a page switch goes straight to its one publish, which on a loaded host
   * each pass over 12,500 sockets held up by tens of milliseconds.
   */
  layoutChanged(layoutId: string): void {
    if (!this.registry.hasLayout(layoutId)) return;
    this.watchLight(layoutId); // a canvas made or dropped by a re-import
    void Promise.resolve(this.s.layouts.get(layoutId)).then(
      async (layout) => {
        if (!layout || this.revocationsChanged(layout)) {
          const closing: [LiveSocket, SocketData][] = [];
          for (const entry of this.registry.ofLayout(layoutId)) if (!layout || revokedByLayout(entry[1].claims, layout)) closing.push(entry);
          for (const [ws, data] of closing) {
            if (!layout) this.registry.end(ws, data, CLOSE.layoutGone, 'the layout is gone');
            else this.registry.end(ws, data, CLOSE.tokenInvalid, 'token_revoked');
          }
        }
        if (layout) await this.publisher.publishPage(layout);
      },
      (e: unknown) => this.publisher.failed(e, 'live_page'),
    );
  }

  /**
   * Whether a layout's revocations differ from those its sockets were last checked against (then
   * they are noted as checked). A socket that opens later is checked when its first page is sent.
   */
  private revocationsChanged(layout: LiveLayout): boolean {
    const seen = this.checked.get(layout.layoutId);
    if (seen && sameRevocations(seen, layout)) return false;
    this.checked.set(layout.layoutId, { tokensRevokedBefore: layout.tokensRevokedBefore, revokedSubs: layout.revokedSubs });
    return true;
  }

  /**
   * The caches were re-read (CACHE_RECHECK_MS, a reconnect): each layout held here is looked at
   * again, and the sockets of revoked API keys and of signing keys no longer active close, as their
   * invalidation messages would have closed them had they been heard.
   */
  recheck(keyRevoked: (keyId: string) => boolean, signingKeyActive: (kid: string) => boolean): void {
    for (const layoutId of this.registry.layouts()) this.layoutChanged(layoutId);
    this.registry.endWhere((d) => keyRevoked(d.claims.keyId) || !signingKeyActive(d.claims.kid), CLOSE.tokenInvalid, 'token_revoked');
  }

  /** An API key was revoked: the sockets of the tokens it minted close with CLOSE.tokenInvalid. */
  keyRevoked(keyId: string): void {
    this.registry.endWhere((d) => d.claims.keyId === keyId, CLOSE.tokenInvalid, 'token_revoked');
  }

  /** The signing keys changed: the sockets of tokens signed with a key no longer active close with CLOSE.tokenInvalid. */
  signingKeysChanged(active: (kid: string) => boolean): void {
    this.registry.endWhere((d) => !active(d.claims.kid), CLOSE.tokenInvalid, 'token_revoked');
  }

  /**
   * The gateway stops (its listen socket is closed already): every socket closes with CLOSE.serviceRestart and
   * when to come back, spread over `drainMs` (LIVE_DRAIN_MS), so the gateways that stay get a ramp,
   * not a storm. Resolves once all are closed.
   */
  async closeAll(drainMs = this.o.drainMs): Promise<void> {
    this.backpressure.stop();
    this.lifecycle.stop();
    this.admission.stop();
    await this.registry.drain(drainMs);
  }
}

