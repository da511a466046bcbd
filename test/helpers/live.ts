// A `ws` client on a gateway's live channel, as a phone connects: the subprotocols
// `audience-control.v1` and `bearer.<token>`, the frames received kept in order, how it closed.
import WebSocket from 'ws';
import { eventually } from './gateway.js';
import { LOADED_MACHINE_MS } from './loaded-machine.js';

export interface Frame {
  op: string;
  ref?: string | null;
  [k: string]: unknown;
}

export interface LiveClient {
  ws: WebSocket;
  frames: Frame[];
  closed: Promise<{ code: number; reason: string }>;
  /** the first frame with this op after the first `after` frames, waited for up to LOADED_MACHINE_MS (or `ms`) */
  next: (op: string, after?: number, ms?: number) => Promise<Frame>;
  send: (frame: object) => void;
}

/** ws://host:port/live from a gateway's http:// base URL. */
export function liveUrl(base: string): string {
  return `${base.replace(/^http/, 'ws')}/live`;
}

export function liveProtocols(token: string): string[] {
  return ['audience-control.v1', `bearer.${token}`];
}

/**
 * Opens a socket on `base`'s live channel with `token` and waits for its first frame (the page);
 * rejects if the upgrade is refused. A socket that uWS drops (1006) right after an asynchronous
 * upgrade, before any frame (uNetworking/uWebSockets#1928, counted by the gateway as
 * live_lost_at_upgrade_total), is opened again, as every client reconnects: at most twice.
 */
export async function connectLive(base: string, token: string, options: WebSocket.ClientOptions = {}): Promise<LiveClient> {
  for (let attempt = 0; ; attempt++) {
    const client = await openLive(base, token, options);
    const first = await Promise.race([client.next('page').then(() => 'page' as const, () => 'no page' as const), client.closed.then((c) => c.code)]);
    if (first === 'page' || attempt === 2 || first !== 1006 || client.frames.length > 0) return client;
  }
}

async function openLive(base: string, token: string, options: WebSocket.ClientOptions): Promise<LiveClient> {
  const ws = new WebSocket(liveUrl(base), liveProtocols(token), options);
  const frames: Frame[] = [];
  ws.on('message', (data: Buffer) => frames.push(JSON.parse(data.toString('utf8')) as Frame));
  const closed = new Promise<{ code: number; reason: string }>((r) => ws.once('close', (code, reason) => r({ code, reason: String(reason) })));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const next = async (op: string, after = 0, ms = LOADED_MACHINE_MS) => {
    await eventually(() => frames.slice(after).some((f) => f.op === op), ms);
    return frames.slice(after).find((f) => f.op === op)!;
  };
  return { ws, frames, closed, next, send: (frame) => ws.send(JSON.stringify(frame)) };
}

/** The socket's close, or a failure naming the frames it got, within a loaded machine's bound. */
export async function closeOf(c: Pick<LiveClient, 'closed' | 'frames'>, ms = LOADED_MACHINE_MS): Promise<{ code: number; reason: string }> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no close within ${ms} ms; frames: ${c.frames.map((f) => f.op).join(',')}`)), ms);
  });
  try {
    return await Promise.race([c.closed, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** How an upgrade is answered: 101 with the socket, or the refusal's status, headers and body. */
export function attemptLive(
  base: string,
  protocols: string[],
  headers: Record<string, string> = {},
  options: WebSocket.ClientOptions = {},
): Promise<{ status: number; retryAfter?: string; body?: string; protocol?: string; ws?: WebSocket }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(liveUrl(base), protocols, { ...options, headers });
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body, ...(res.headers['retry-after'] !== undefined && { retryAfter: String(res.headers['retry-after']) }) });
        ws.terminate();
      });
    });
    ws.on('error', () => {});
    ws.on('open', () => resolve({ status: 101, protocol: ws.protocol, ws }));
  });
}
