// The audience app's side of the live channel, for browsers and Node: one socket to the gateway,
// reconnected with full-jitter exponential backoff as the close codes say, the live page and the
// crowd's values kept as state with change events, and actions sent with a promise of their ack.
// No dependencies: in a browser it uses the global WebSocket; in Node pass one (the `ws` package).

/** What the client needs of a WebSocket: the browser's and the `ws` package's both fit. */
export interface SocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: { code: number; reason: string }) => void) | null;
  onerror: ((event: unknown) => void) | null;
}
export type SocketConstructor = new (url: string, protocols: string[]) => SocketLike;

export interface Control {
  lid: number;
  address: string;
  type: 'Button' | 'Slider' | 'Toggle' | 'Index' | 'String' | 'XYPad';
  props?: { label?: string };
  options?: { index: number; label: string }[];
  aggregate?: { mode: string; windowMs?: number };
}
export interface Page {
  layoutId: string;
  activePageId: string;
  controls: Control[];
  destinationCount: number;
  version: number;
  /** when the page was switched to or the layout imported (ms since the epoch, the switcher's clock) */
  changedAt: number;
}
export interface CrowdValue {
  lid: number;
  mode: string;
  /** one number; [x, y] for centroid; counts per option for votes */
  value: number | number[];
  n: number;
  sd?: number;
  /** for a layout with zones: the same value and n for each zone that counts someone */
  zones?: Record<string, { value: number | number[]; n: number }>;
}
export interface Action {
  lid: number;
  type: Control['type'];
  value?: unknown;
}

/** A refused action (the HTTP API's code: invalid_value, rate_limited, ...), a timeout, or a client that stopped. */
export class LiveError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'LiveError';
  }
}

export type State = 'connecting' | 'open' | 'waiting' | 'stopped';

export interface LiveClientOptions {
  /** the gateway's live channel, e.g. wss://gateway.example/live */
  url: string;
  /** the audience token its backend minted */
  token: string;
  /** asked for a new token when the gateway says this one is no longer valid (close 4001); without it the client stops */
  refreshToken?: () => Promise<string>;
  /** the WebSocket to use (default: the global one) */
  WebSocket?: SocketConstructor;
  /** how long send() waits for the ack, reconnects included (default 10 s) */
  ackTimeoutMs?: number;
  /** reconnect delays: full jitter up to min(maxDelayMs, baseDelayMs * 2^attempt) (defaults 250 ms, 30 s) */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** for tests: the randomness of the jitter */
  random?: () => number;
}

/** The delay before reconnect attempt `attempt` (0-based): full jitter, uniform in [0, min(max, base * 2^attempt)). */
export function reconnectDelay(attempt: number, baseMs: number, maxMs: number, random: () => number): number {
  return Math.floor(random() * Math.min(maxMs, baseMs * 2 ** attempt));
}

/** A client kept past its budget (4029) waits at least this long before it reconnects. */
export const FLOOD_PAUSE_MS = 5000;

interface Pending {
  frame: string;
  resolve: () => void;
  reject: (e: LiveError) => void;
  timer: ReturnType<typeof setTimeout>;
}

type Events = { page: Page; crowd: CrowdValue; state: State; closed: { code: number; reason: string } };

export class LiveClient {
  /** the live page, once the gateway sent it */
  page: Page | null = null;
  /** the crowd's values on the live page, by lid */
  readonly crowd = new Map<number, CrowdValue>();
  state: State = 'connecting';
  private socket: SocketLike | null = null;
  private token: string;
  private attempt = 0;
  private retry: ReturnType<typeof setTimeout> | null = null;
  private readonly pending = new Map<string, Pending>();
  private readonly listeners = new Map<keyof Events, Set<(v: never) => void>>();
  private refs = 0;
  private readonly o: Required<Omit<LiveClientOptions, 'refreshToken'>> & Pick<LiveClientOptions, 'refreshToken'>;

  constructor(options: LiveClientOptions) {
    const WS = options.WebSocket ?? (globalThis as { WebSocket?: SocketConstructor }).WebSocket;
    if (!WS) throw new Error('no WebSocket: pass options.WebSocket (in Node, the ws package)');
    this.o = { ackTimeoutMs: 10_000, baseDelayMs: 250, maxDelayMs: 30_000, random: Math.random, ...options, WebSocket: WS };
    this.token = options.token;
    this.open();
  }

  on<K extends keyof Events>(event: K, listener: (value: Events[K]) => void): () => void {
    let set = this.listeners.get(event);
    if (!set) this.listeners.set(event, (set = new Set()));
    set.add(listener);
    return () => set.delete(listener);
  }

  private emit<K extends keyof Events>(event: K, value: Events[K]): void {
    for (const l of this.listeners.get(event) ?? []) (l as (v: Events[K]) => void)(value);
  }

  private setState(state: State): void {
    if (this.state === state) return;
    this.state = state;
    this.emit('state', state);
  }

  /**
   * Sends an action; resolves once the gateway stored it (its ack), rejects with a LiveError
   * (the API's code, or `timeout`). An idempotency key goes with it, so the resends after a
   * reconnect are stored once.
   */
  send(action: Action): Promise<void> {
    if (this.state === 'stopped') return Promise.reject(new LiveError('stopped', 'The client is stopped.'));
    const ref = `${++this.refs}`;
    const frame = JSON.stringify({ op: 'action', ref, ...action, idempotencyKey: randomKey() });
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(ref);
        reject(new LiveError('timeout', `No answer within ${this.o.ackTimeoutMs} ms.`));
      }, this.o.ackTimeoutMs);
      this.pending.set(ref, { frame, resolve, reject, timer });
      if (this.socket?.readyState === 1) this.socket.send(frame);
    });
  }

  /** Closes the socket for good; pending sends are rejected. */
  stop(): void {
    this.setState('stopped');
    if (this.retry) clearTimeout(this.retry);
    this.socket?.close(1000, 'done');
    for (const [ref, p] of this.pending) {
      clearTimeout(p.timer);
      this.pending.delete(ref);
      p.reject(new LiveError('stopped', 'The client is stopped.'));
    }
  }

  private open(): void {
    this.setState('connecting');
    const socket = new this.o.WebSocket(this.o.url, ['audience-control.v1', `bearer.${this.token}`]);
    this.socket = socket;
    socket.onopen = () => {
      this.setState('open');
      for (const p of this.pending.values()) socket.send(p.frame); // resends keep their idempotency keys
    };
    socket.onmessage = (event) => this.received(String(event.data));
    socket.onerror = () => {}; // a close follows
    socket.onclose = (event) => this.closed(event.code, event.reason);
  }

  private received(text: string): void {
    let frame: { op?: string; ref?: string | null; error?: { code: string; message: string; retryAfterMs?: number } } & Record<string, unknown>;
    try {
      frame = JSON.parse(text) as typeof frame;
    } catch {
      return;
    }
    if (frame.op === 'page') {
      const page = frame as unknown as Page & { op: string };
      if (this.page && page.version < this.page.version) return; // an older one overtaken
      this.attempt = 0; // a page: the connection works
      const { op: _, ...rest } = page;
      this.page = rest;
      const onPage = new Set(rest.controls.map((c) => c.lid));
      for (const lid of this.crowd.keys()) if (!onPage.has(lid)) this.crowd.delete(lid);
      this.emit('page', rest);
    } else if (frame.op === 'crowd') {
      const { op: _, ...value } = frame as unknown as CrowdValue & { op: string };
      this.crowd.set(value.lid, value);
      this.emit('crowd', value);
    } else if ((frame.op === 'ack' || frame.op === 'error') && typeof frame.ref === 'string') {
      const p = this.pending.get(frame.ref);
      if (!p) return;
      this.pending.delete(frame.ref);
      clearTimeout(p.timer);
      if (frame.op === 'ack') p.resolve();
      else p.reject(new LiveError(frame.error?.code ?? 'internal', frame.error?.message ?? 'refused', frame.error?.retryAfterMs));
    }
  }

  /** What the close code says to do: stop, get a new token, or reconnect after a jittered delay. */
  private closed(code: number, reason: string): void {
    this.socket = null;
    this.emit('closed', { code, reason });
    if (this.state === 'stopped') return;
    if (code === 4004) return this.stop(); // the layout is gone
    if (code === 4001) {
      if (!this.o.refreshToken) return this.stop(); // do not reconnect with this token
      this.setState('waiting');
      this.o.refreshToken().then(
        (token) => {
          this.token = token;
          this.schedule(0);
        },
        () => this.stop(),
      );
      return;
    }
    this.setState('waiting');
    this.schedule(code === 4029 ? FLOOD_PAUSE_MS : 0);
  }

  private schedule(atLeastMs: number): void {
    if (this.state === 'stopped') return;
    const delay = Math.max(atLeastMs, reconnectDelay(this.attempt++, this.o.baseDelayMs, this.o.maxDelayMs, this.o.random));
    this.retry = setTimeout(() => this.open(), delay);
  }
}

/** 16 random hex characters (an idempotency key). */
function randomKey(): string {
  const bytes = new Uint8Array(8);
  globalThis.crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}
