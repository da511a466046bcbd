// One simulated phone: a live socket (GET /live, its token as the bearer subprotocol) or, for apps
// without sockets, POST /action. A phone keeps one action in flight, as an app that awaits each
// ack does; actions planned while one is out wait their turn, and their latency counts from the
// planned moment (ack_ms), beside the time from the actual send (ack_service_ms): a stalled target
// shows in the first and hides in the second, as coordinated omission would hide it. Each action
// carries an idempotency key, so the one in flight when its socket is lost (or its request fails)
// is sent again and stored once. A socket keeps the live client's heartbeat (FRAME_LIMITS): a quiet
// one pings, and one that heard nothing back in time is left for a new one at once, so a phone of a
// vanished host comes back (outage_ms: from the last frame it heard to the new socket's page).
import WebSocket from 'ws';
import { ACK_PREFIX, CLIENT_OP, CLOSE_ACTION, CROWD_PREFIX, FRAME_LIMITS, SERVER_OP, liveSubprotocols } from '../schemas/live-protocol.js';
import type { PlayAction, PlayControl } from './crowd-model.js';
import type { DisplayWatch } from './display-watch.js';
import type { Metrics } from './metrics.js';

/** Close codes after which a phone does not reconnect with its token (it renews none). */
const FINAL_CLOSES = new Set<number>(Object.entries(CLOSE_ACTION).filter(([, what]) => what === 'stop' || what === 'renew').map(([code]) => Number(code)));
const isFinal = (code: number): boolean => FINAL_CLOSES.has(code);
/** At most this many planned actions wait behind the one in flight; more are counted unsent. */
const QUEUE_MAX = 100;
/** An HTTP action that failed on the way (no answer, 502, 503, 504) is sent again this many times at most. */
const HTTP_RESENDS = 5;
const PING = JSON.stringify({ op: CLIENT_OP.ping });
/** The ref of a socket's restatement of its latest values (its answer is no planned action's). */
const RESTATE_REF = 'restate';

export interface LivePage {
  pageId: string;
  version: number;
  controls: PlayControl[];
  /** when the page was switched to (ms since the epoch, the switcher's clock), as page frames carry it */
  changedAt?: number;
}

export interface PhoneEnv {
  metrics: Metrics;
  /** ms on the run's clock */
  now: () => number;
  target: URL;
  layoutId: string;
  /** source addresses sockets are spread over (empty: the system's choice) */
  sourceAddresses: readonly string[];
  /** a page this phone's socket brought (its first, or a switch), at `at` on the run's clock and `wallAt` ms since the epoch */
  sawPage: (phone: Phone, page: LivePage, at: number, wallAt: number) => void;
  /** the run is ending: nothing reconnects */
  stopping: () => boolean;
  /** with --osc-listen: String actions are tagged and looked for at the display */
  display: DisplayWatch | null;
  /** an action of this phone was sent (its first send; the crowd check) */
  sent?: (phone: Phone, action: PlayAction) => void;
  /** an action of this phone, first sent at `sentAt`, was stored (acked) at `at` (the crowd check) */
  stored?: (phone: Phone, action: PlayAction, at: number, sentAt: number) => void;
  /** an action of this phone was refused by the gateway (an error answer: not stored) */
  refused?: (phone: Phone, action: PlayAction) => void;
  /** a socket lost without this phone closing it is live again: its new page came at `wallAt` (ms since the epoch) */
  back?: (wallAt: number) => void;
  /** a new token of the same participant (POST /token with renew), as the app's backend mints it */
  renew?: (token: string) => Promise<string>;
  /** makes the phones' idempotency keys unique to this run */
  runId?: string;
}

interface Pending {
  action: PlayAction;
  intendedAt: number;
  /** its latest send */
  sentAt: number;
  /** its first send: stored, it was stored once, at a moment from then to its ack */
  firstSentAt: number;
  ref: string;
  /** the display tag of a String action (--osc-listen) */
  tag: string | null;
  /** times sent (a resend after a lost socket or a failed request carries the same key) */
  sends: number;
}

export class Phone {
  page: LivePage | null = null;
  private ws: WebSocket | null = null;
  private inFlight: Pending | null = null;
  private readonly queue: { action: PlayAction; intendedAt: number; again?: Pending }[] = [];
  private refs = 0;
  private attempts = 0;
  private connectAt = 0;
  private closedByUs = false;
  /** a socket opened and its first page has not come yet (connect_ms) */
  private awaitingPage = false;
  private ended = false;
  /** the run's phases are over: only actions sent already (resends) go out */
  private windingDown = false;
  /** the last crowd frame's arrival, by lid */
  private readonly crowdAt = new Map<number, number>();
  /** by lid: the latest acked value of each aggregated control (not a Button's press), and when it was sent (run clock): restated on a new socket, as the live client does */
  private readonly latest = new Map<number, { action: PlayAction; sentAt: number }>();
  /** the heartbeat: when the open socket last heard a frame, and since when a frame it sent is unanswered */
  private heardAt = 0;
  private unansweredSince: number | null = null;
  /** the heartbeat found the deadline passed once: the frames that came meanwhile are read before the next look judges */
  private overdue = false;
  /** a socket was lost (not closed by this phone): when its last frame came, for outage_ms */
  private lostSince: number | null = null;
  private renewing = false;

  constructor(
    readonly id: number,
    readonly transport: 'socket' | 'http',
    private token: string,
    private readonly env: PhoneEnv,
  ) {}

  /** Opens the socket (planned at `intendedAt`); an HTTP phone is ready at once. */
  connect(intendedAt: number): void {
    this.connectAt = intendedAt;
    if (this.transport === 'socket') this.open();
  }

  /** Plans an action at `intendedAt`: sent now, or once the one in flight is answered. */
  act(action: PlayAction, intendedAt: number): void {
    if (this.ended) return;
    if (this.inFlight || (this.transport === 'socket' && this.ws?.readyState !== WebSocket.OPEN)) {
      if (this.queue.length >= QUEUE_MAX) return void this.env.metrics.count('unsent');
      this.queue.push({ action, intendedAt });
      return;
    }
    this.send(action, intendedAt);
  }

  /** Closes the socket and opens it again after `afterMs` (a reconnect storm). */
  reconnect(afterMs: number): void {
    if (this.transport !== 'socket' || this.ended) return;
    this.closedByUs = true;
    this.ws?.close(1000);
    this.ws = null;
    setTimeout(() => {
      this.env.metrics.count('reconnects');
      this.connectAt = this.env.now();
      this.open();
    }, afterMs).unref();
  }

  /**
   * The heartbeat, looked at by the run every 100 ms: a quiet open socket pings; one that sent a
   * ping or an action and heard nothing back for FRAME_LIMITS.heartbeatDeadMs is a dead link (a
   * vanished host, a path gone silent): left without a close handshake, and a new one opened at once.
   */
  beat(now: number): void {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN || this.ended) return;
    if (this.unansweredSince !== null && now - this.unansweredSince >= FRAME_LIMITS.heartbeatDeadMs) {
      // a generator stalled past the deadline runs its timers before the frames that came meanwhile
      if (!this.overdue) return void (this.overdue = true);
      this.env.metrics.count('dead_links');
      ws.removeAllListeners('close');
      ws.removeAllListeners('message');
      ws.terminate();
      this.lost(now);
      this.connectAt = now;
      this.open();
      return;
    }
    if (this.unansweredSince === null && now - this.heardAt >= FRAME_LIMITS.heartbeatIdleMs) {
      this.unansweredSince = now;
      ws.send(PING);
    }
  }

  /**
   * Renews the token (the backend's POST /token with renew) and gives it to the socket (`refresh`),
   * or uses it for the next requests: the participant stays the same.
   */
  renew(): void {
    const renew = this.env.renew;
    if (!renew || this.renewing || this.ended) return;
    this.renewing = true;
    renew(this.token).then(
      (token) => {
        this.renewing = false;
        this.token = token;
        this.env.metrics.count('renewals');
        if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify({ op: CLIENT_OP.refresh, token }));
      },
      (e: unknown) => {
        this.renewing = false;
        this.env.metrics.error(e instanceof Error && /^renew_/.test(e.message) ? e.message : 'renew_network');
      },
    );
  }

  /** Ends the phone: its socket closes, nothing more is sent. */
  end(): void {
    this.ended = true;
    this.closedByUs = true;
    this.ws?.close(1000);
    this.ws = null;
  }

  /** A socket lost without this phone closing it: its action in flight goes again, first, on the next one. */
  private lost(now: number): void {
    this.ws = null;
    this.lostSince ??= this.heardAt || now;
    if (this.inFlight) {
      this.queue.unshift({ action: this.inFlight.action, intendedAt: this.inFlight.intendedAt, again: this.inFlight });
      this.inFlight = null;
    }
  }

  /** Actions planned or in flight that were never answered. */
  get unanswered(): number {
    return this.queue.length + (this.inFlight ? 1 : 0);
  }

  /** The run is over: no planned action is sent any more, and an action sent already still goes again until answered. */
  windDown(): void {
    this.windingDown = true;
  }

  /** No action was sent and is still unanswered: whatever it sent is acked or refused, so what is stored is known. */
  get settled(): boolean {
    return this.ended || (!this.inFlight && !this.queue.some((q) => q.again));
  }

  private open(): void {
    const url = new URL('/live', this.env.target);
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    const addresses = this.env.sourceAddresses;
    const ws = new WebSocket(url, liveSubprotocols(this.token), {
      perMessageDeflate: false,
      ...(addresses.length > 0 && { localAddress: addresses[this.id % addresses.length] }),
    });
    this.ws = ws;
    this.closedByUs = false;
    this.awaitingPage = true;
    this.heardAt = this.env.now();
    this.unansweredSince = null;
    this.overdue = false;
    ws.on('open', () => {
      this.env.metrics.count('sockets_opened');
      this.restate(ws);
    });
    ws.on('unexpected-response', (_req, res) => {
      res.resume();
      this.env.metrics.count('socket_failures');
      this.env.metrics.error(`http_${res.statusCode ?? 0}`);
      ws.terminate();
    });
    ws.on('error', () => {}); // a close follows
    ws.on('message', (data: Buffer) => this.received(data));
    ws.on('close', (code) => {
      if (this.ws !== ws) return; // replaced by a reconnect
      this.ws = null;
      if (this.closedByUs || this.ended || this.env.stopping()) {
        if (this.inFlight) this.env.metrics.error('unanswered');
        this.inFlight = null;
        return;
      }
      this.lost(this.env.now());
      if (code !== 1006 || this.page) this.env.metrics.error(`close_${code}`);
      if (isFinal(code)) return void (this.ended = true);
      // full jitter: a random wait below min(5 s, 250 ms x 2^attempt)
      const wait = Math.random() * Math.min(5000, 250 * 2 ** this.attempts++);
      this.connectAt = this.env.now(); // connect_ms counts from the drop: the backoff is part of it
      setTimeout(() => !this.ended && !this.env.stopping() && this.open(), wait).unref();
    });
  }

  private received(data: Buffer): void {
    const now = this.env.now();
    this.heardAt = now;
    this.unansweredSince = null;
    this.overdue = false;
    const text = data.toString();
    // the two frequent frames without a JSON parse, by the prefixes the protocol gives them
    if (text.startsWith(ACK_PREFIX) && text.endsWith('"}')) {
      const ref = text.slice(ACK_PREFIX.length, -2);
      return ref === RESTATE_REF ? this.env.metrics.count('restates') : this.answered(ref, null, now);
    }
    if (text.startsWith(CROWD_PREFIX)) return this.crowdFrame(Number.parseInt(text.slice(CROWD_PREFIX.length), 10), now);
    let frame: { op?: string; ref?: string; lid?: number; activePageId?: string; version?: number; changedAt?: number; controls?: PlayControl[]; error?: { code?: string } };
    try {
      frame = JSON.parse(text) as typeof frame;
    } catch {
      return void this.env.metrics.error('bad_frame');
    }
    switch (frame.op) {
      case SERVER_OP.page: {
        this.env.metrics.count('page_frames');
        if (this.awaitingPage) this.env.metrics.record('connect_ms', now - this.connectAt);
        if (this.awaitingPage && this.lostSince !== null) {
          this.env.metrics.record('outage_ms', now - this.lostSince);
          this.env.back?.(Date.now());
        }
        this.lostSince = null;
        this.awaitingPage = false;
        this.attempts = 0;
        if (this.page && this.page.version >= (frame.version ?? 0)) return this.flush();
        this.page = { pageId: frame.activePageId ?? '', version: frame.version ?? 0, controls: frame.controls ?? [], ...(typeof frame.changedAt === 'number' && { changedAt: frame.changedAt }) };
        this.env.sawPage(this, this.page, now, Date.now());
        return this.flush();
      }
      case SERVER_OP.crowd:
        return this.crowdFrame(frame.lid ?? 0, now);
      case SERVER_OP.refreshed:
      case SERVER_OP.pong:
        return;
      case SERVER_OP.ack:
      case SERVER_OP.error:
        if (frame.ref === RESTATE_REF) return frame.op === SERVER_OP.ack ? this.env.metrics.count('restates') : this.env.metrics.error(`restate_${frame.error?.code ?? 'unknown'}`);
        return this.answered(frame.ref ?? null, frame.op === SERVER_OP.ack ? null : (frame.error?.code ?? 'unknown'), now);
    }
  }

  private crowdFrame(lid: number, now: number): void {
    this.env.metrics.count('crowd_frames');
    const last = this.crowdAt.get(lid);
    if (last !== undefined) this.env.metrics.record('crowd_interval_ms', now - last);
    this.crowdAt.set(lid, now);
  }

  private send(action: PlayAction, intendedAt: number, again?: Pending): void {
    const sentAt = this.env.now();
    let p: Pending;
    if (again) {
      p = { ...again, sentAt, sends: again.sends + 1 };
      this.env.metrics.count('resends');
    } else {
      const ref = String(++this.refs);
      const display = this.env.display;
      const tag = display && action.type === 'String' ? display.tag(this.id, ref) : null;
      if (tag !== null) {
        action = { ...action, value: `${String(action.value)} #${tag}` };
        display!.sent(tag, intendedAt);
      }
      p = { action, intendedAt, sentAt, firstSentAt: sentAt, ref, tag, sends: 1 };
      this.env.metrics.count('actions');
      this.env.sent?.(this, action);
    }
    this.inFlight = p;
    const idempotencyKey = `${this.env.runId ?? 'run'}.${this.id}.${p.ref}`;
    if (this.transport === 'socket') {
      if (!again) this.env.metrics.count('socket_actions');
      this.unansweredSince ??= sentAt;
      this.ws!.send(JSON.stringify({ op: CLIENT_OP.action, ref: p.ref, idempotencyKey, ...p.action }));
      return;
    }
    if (!again) this.env.metrics.count('http_actions');
    fetch(new URL('/action', this.env.target), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${this.token}`, 'idempotency-key': idempotencyKey },
      body: JSON.stringify({ layoutId: this.env.layoutId, ...p.action }),
    })
      .then(async (r) => {
        const body = (await r.json().catch(() => ({}))) as { error?: { code?: string } };
        if (r.status >= 502 && r.status <= 504) return this.failedOnTheWay(p);
        this.answered(p.ref, r.ok ? null : (body.error?.code ?? `http_${r.status}`), this.env.now());
      })
      .catch(() => this.failedOnTheWay(p));
  }

  /** An HTTP action that got no answer from a gateway (the network, or the load balancer's 502 to 504): sent again with its key. */
  private failedOnTheWay(p: Pending): void {
    if (this.inFlight !== p) return;
    if (p.sends > HTTP_RESENDS || this.ended || this.env.stopping()) return this.answered(p.ref, 'network', this.env.now());
    setTimeout(() => this.inFlight === p && this.send(p.action, p.intendedAt, p), 100 * p.sends).unref();
  }

  private answered(ref: string | null, errorCode: string | null, now: number): void {
    const p = this.inFlight;
    if (!p || p.ref !== ref) return void this.env.metrics.error(errorCode ?? 'stray_ack');
    this.inFlight = null;
    const labels = `transport=${this.transport},type=${p.action.type}`;
    if (errorCode === null) {
      if (p.tag !== null) this.env.display?.acked(p.tag);
      this.keepLatest(p);
      this.env.stored?.(this, p.action, now, p.firstSentAt);
      this.env.metrics.count('acks');
      this.env.metrics.record('ack_ms', now - p.intendedAt, labels);
      this.env.metrics.record('ack_service_ms', now - p.sentAt, labels);
    } else {
      if (errorCode !== 'network') this.env.refused?.(this, p.action); // no answer at all: it may be stored
      this.env.metrics.error(errorCode);
    }
    this.flush();
  }

  /** An acked action of an aggregated control: its latest value, for the restatement on a new socket. */
  private keepLatest(p: Pending): void {
    const aggregate = this.page?.controls.find((c) => c.lid === p.action.lid)?.aggregate;
    if (this.transport !== 'socket' || !aggregate || aggregate.mode === 'rate') return;
    this.latest.delete(p.action.lid); // newest last
    this.latest.set(p.action.lid, { action: p.action, sentAt: p.sentAt });
  }

  /** A new socket restates the latest acked values with their age (a process that lost them counts the phone again at once). */
  private restate(ws: WebSocket): void {
    if (this.latest.size === 0) return;
    const now = this.env.now();
    const values = [...this.latest.values()].slice(-FRAME_LIMITS.restateMaxValues).map((l) => ({ lid: l.action.lid, type: l.action.type, value: l.action.value, ageMs: Math.max(0, Math.round(now - l.sentAt)) }));
    this.unansweredSince ??= now;
    ws.send(JSON.stringify({ op: CLIENT_OP.restate, ref: RESTATE_REF, values }));
  }

  /** Sends the next planned action, if the phone can. */
  private flush(): void {
    if (this.inFlight || this.ended) return;
    if (this.transport === 'socket' && this.ws?.readyState !== WebSocket.OPEN) return;
    // a resend waits at the front (lost()); while winding down nothing else goes
    if (this.windingDown && !this.queue[0]?.again) return;
    const next = this.queue.shift();
    if (next) this.send(next.action, next.intendedAt, next.again);
  }
}
