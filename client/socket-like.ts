// What the client needs of a WebSocket (the browser's, React Native's and the `ws` package's all
// fit), and what a refused upgrade tells where the WebSocket shows it (Node's `ws`).
/**
 * What the client needs of a WebSocket: the browser's, React Native's and the `ws` package's all
 * fit as they are (no cast). The handlers' events are typed `never` here so that each
 * implementation's own event types are accepted; the client reads only a message's `data` and a
 * close's `code` and `reason`.
 */
export interface SocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((event: never) => void) | null;
  onmessage: ((event: never) => void) | null;
  onclose: ((event: never) => void) | null;
  onerror: ((event: never) => void) | null;
}
export type SocketConstructor = new (url: string, protocols: string[]) => SocketLike;

/** What a refused upgrade said, where the WebSocket tells it (Node's `ws`; a browser tells nothing). */
export interface Refusal {
  status: number;
  retryAfterMs?: number;
}

/** The `ws` package's events of a refused upgrade (an EventEmitter), as far as the client reads them. */
export interface RefusalEvents {
  once(event: 'unexpected-response', listener: (req: unknown, res: { statusCode?: number; headers: Record<string, string | string[] | undefined>; resume(): void }) => void): unknown;
  terminate(): void;
}

/**
 * Where the WebSocket is Node's `ws` (an EventEmitter that emits `unexpected-response`): the status
 * and Retry-After of a refused upgrade, before the close 1006 that follows. The client then renews
 * on a 401 at once, stops on a 404, and waits as Retry-After says on a 429 or 503.
 */
export function whenRefused(socket: SocketLike, told: (r: Refusal) => void): void {
  const events = socket as unknown as Partial<RefusalEvents>;
  if (typeof events.once !== 'function' || typeof events.terminate !== 'function') return;
  events.once('unexpected-response', (_req, res) => {
    const seconds = Number(res.headers['retry-after']);
    told({ status: res.statusCode ?? 0, ...(Number.isFinite(seconds) && seconds >= 0 && { retryAfterMs: seconds * 1000 }) });
    res.resume();
    events.terminate!(); // ws then closes the socket (1006), as a browser would
  });
}
