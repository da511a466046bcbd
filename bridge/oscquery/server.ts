// The bridge's OSCQuery server (github.com/Vidvox/OSCQueryProposal), on oscQueryHost:oscQueryPort:
//   - HTTP GET of a path: that node of the namespace with everything under it; `?ATTRIBUTE` one
//     attribute of it ({} when the node has none; VALUE of a container: 204); `?HOST_INFO` the
//     server's name, extensions and where the OSC goes. An unknown path: 404; an attribute this
//     server does not have: 400; another method: 405. Errors are JSON {"error": code, "message"}.
//   - WebSocket on the same port: {"COMMAND": "LISTEN" | "IGNORE", "DATA": "/address"} starts and
//     stops streaming what the bridge plays to that address, each message as a binary OSC packet;
//     {"COMMAND": "PATH_CHANGED", "DATA": "/"} tells every client when the namespace changes. The
//     namespace is read-only: OSC a client sends is ignored.
// A slow client never holds the bridge up: while more than MAX_BUFFERED bytes wait to reach it,
// what it listens to is not sent to it (its VALUE attributes stay current). Every request and
// upgrade is checked first: its Host must be a loopback name, an IP address, this machine's name or
// one allowed (no DNS rebinding), its Origin, when a browser sends one, loopback or allowed (no
// cross-origin page on the venue host reads the audience's text), and one peer holds at most
// MAX_CLIENTS_PER_PEER of the WebSocket slots. The bridge runs this server in a thread of its own
// (server-thread.ts), off the send loop's event loop.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import type { Duplex } from 'node:stream';
import { toBuffer } from 'osc-min';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import type { OscArg } from '../osc.js';
import { ATTRIBUTES, Tree } from './tree.js';
import type { Method } from './namespace.js';

/** WebSocket clients at once; more are answered 503. */
export const MAX_CLIENTS = 64;
/** WebSocket clients of one peer address at once; more are answered 503. */
export const MAX_CLIENTS_PER_PEER = 8;
/** Addresses one client may listen to. */
export const MAX_LISTENS = 4096;
const MAX_BUFFERED = 1 << 20;
const MAX_COMMAND_BYTES = 4096;

export interface HostInfo {
  NAME: string;
  OSC_IP?: string;
  OSC_PORT?: number;
  OSC_TRANSPORT?: 'UDP' | 'TCP';
  /** every display the namespace goes to, as transport://host:port (the first is OSC_IP and OSC_PORT) */
  TARGETS: string[];
}

/** A message the bridge played to one of its targets. */
export interface PlayedMessage {
  address: string;
  args: readonly OscArg[];
}

export interface OscQueryServer {
  readonly port: number;
  /** Replaces the namespace; clients hear PATH_CHANGED when its shape changed. Values played at an address kept are kept. */
  setNamespace(methods: ReadonlyMap<string, Method>): void;
  /** What a target (`layoutId#n`) was sent: the value of each method it describes, streamed to its listeners. */
  played(source: string, messages: readonly PlayedMessage[]): void;
  readonly clients: number;
  close(): Promise<void>;
}

const EXTENSIONS = { ACCESS: true, VALUE: true, RANGE: true, DESCRIPTION: true, LISTEN: true, PATH_CHANGED: true };

function send(res: ServerResponse, status: number, body?: unknown, headers: Record<string, string> = {}): void {
  if (body === undefined) {
    res.writeHead(status, { 'cache-control': 'no-store', ...headers });
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store', ...headers });
  res.end(text);
}

const problem = (error: string, message: string) => ({ error, message });

/** The OSC address a request's path names, or null when it is not a path. */
function addressOf(url: string): { address: string; query: string } | null {
  const q = url.indexOf('?');
  const rawPath = (q < 0 ? url : url.slice(0, q)).split('#')[0]!;
  const query = q < 0 ? '' : url.slice(q + 1).split('#')[0]!;
  if (!rawPath.startsWith('/')) return null;
  try {
    return { address: decodeURIComponent(rawPath), query: decodeURIComponent(query) };
  } catch {
    return null;
  }
}

interface Client {
  ws: WebSocket;
  listens: Set<string>;
  peer: string;
}

/** Who may ask: the Host names and web origins taken besides the built-in ones (loopback, IP addresses, this machine's names). */
export interface OscQueryAccess {
  allowedHosts: readonly string[];
  allowedOrigins: readonly string[];
}

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/** The host name of a Host header ("name:port", "[v6]:port"), lower case. */
function hostName(header: string): string {
  const h = header.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1);
  const colon = h.lastIndexOf(':');
  return colon < 0 ? h : h.slice(0, colon);
}

/** Why a request may not be answered (its Host or its Origin), or null. */
export function refusedAccess(headers: IncomingMessage['headers'], access: OscQueryAccess, machineNames: ReadonlySet<string>): { error: string; message: string } | null {
  const host = hostName(headers.host ?? '');
  const ipLiteral = isIP(host) !== 0 || (host.startsWith('[') && isIP(host.slice(1, -1)) !== 0);
  if (host === '' || !(LOOPBACK_NAMES.has(host) || ipLiteral || machineNames.has(host) || access.allowedHosts.some((a) => a.toLowerCase() === host))) {
    return problem('host_not_allowed', `Host ${JSON.stringify(host.slice(0, 64))} is not this bridge's: use its address, or add the name to oscQueryAllowedHosts`);
  }
  const origin = headers.origin;
  if (origin === undefined) return null;
  let parsed: URL | null = null;
  try {
    parsed = new URL(origin);
  } catch {
    parsed = null;
  }
  const loopback = parsed !== null && (parsed.protocol === 'http:' || parsed.protocol === 'https:') && LOOPBACK_NAMES.has(parsed.hostname.toLowerCase());
  if (loopback || access.allowedOrigins.some((a) => a.toLowerCase() === origin.toLowerCase())) return null;
  return problem('origin_not_allowed', `pages of ${JSON.stringify(origin.slice(0, 128))} may not read this bridge's OSCQuery: add the origin to oscQueryAllowedOrigins`);
}

export async function startOscQueryServer(opts: {
  host: string;
  port: number;
  name: string;
  hostInfo: Omit<HostInfo, 'NAME'>;
  description: string;
  access?: OscQueryAccess;
  onError?: (e: Error) => void;
  /** the number of WebSocket clients changed */
  onClients?: (count: number) => void;
}): Promise<OscQueryServer> {
  const access = opts.access ?? { allowedHosts: [], allowedOrigins: [] };
  const machine = hostname().toLowerCase();
  const machineNames = new Set([machine, `${machine}.local`]);
  let tree = new Tree([], opts.description);
  let methods: ReadonlyMap<string, Method> = new Map();
  const clients = new Set<Client>();
  /** listening clients by address */
  const listeners = new Map<string, Set<Client>>();
  const hostInfo: HostInfo = { NAME: opts.name, ...opts.hostInfo };

  const answer = (req: IncomingMessage, res: ServerResponse) => {
    const refused = refusedAccess(req.headers, access, machineNames);
    if (refused) return send(res, 403, refused);
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, problem('method_not_allowed', 'GET only: the namespace is read-only'), { allow: 'GET, HEAD' });
    const at = addressOf(req.url ?? '/');
    if (!at) return send(res, 400, problem('bad_path', 'the path is not a percent-encoded OSC address'));
    const attribute = at.query.split('=')[0]!;
    if (attribute === 'HOST_INFO') return send(res, 200, { ...hostInfo, EXTENSIONS });
    const node = tree.find(at.address);
    if (!node) return send(res, 404, problem('not_found', `no OSC node at ${at.address}`));
    if (attribute === '') return send(res, 200, node);
    if (!ATTRIBUTES.has(attribute)) return send(res, 400, problem('unsupported_attribute', `this server has no attribute ${JSON.stringify(attribute.slice(0, 64))}; it has ${[...ATTRIBUTES, 'HOST_INFO'].join(', ')}`));
    if (attribute === 'VALUE' && node.ACCESS === 0) return send(res, 204);
    const value = node[attribute as keyof typeof node];
    return send(res, 200, value === undefined ? {} : { [attribute]: value });
  };
  const server: Server = createServer((req, res) => {
    try {
      answer(req, res);
    } catch (e) {
      send(res, 400, problem('bad_request', (e as Error).message));
    }
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 10_000;

  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_COMMAND_BYTES });
  const listen = (c: Client, address: string) => {
    if (c.listens.has(address)) return;
    if (c.listens.size >= MAX_LISTENS) {
      c.ws.close(1008, `at most ${MAX_LISTENS} LISTENs per connection`);
      return;
    }
    c.listens.add(address);
    let set = listeners.get(address);
    if (!set) listeners.set(address, (set = new Set()));
    set.add(c);
  };
  const ignore = (c: Client, address: string) => {
    c.listens.delete(address);
    const set = listeners.get(address);
    set?.delete(c);
    if (set?.size === 0) listeners.delete(address);
  };
  const command = (c: Client, data: RawData, binary: boolean) => {
    if (binary) return; // OSC from a client: every method is read-only
    let msg: unknown;
    try {
      msg = JSON.parse(Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.concat(Array.isArray(data) ? data : [Buffer.from(data)]).toString('utf8'));
    } catch {
      c.ws.close(1007, 'a command is a JSON object: {"COMMAND": "LISTEN", "DATA": "/address"}');
      return;
    }
    if (typeof msg !== 'object' || msg === null) return c.ws.close(1007, 'a command is a JSON object');
    const { COMMAND, DATA } = msg as { COMMAND?: unknown; DATA?: unknown };
    if (COMMAND !== 'LISTEN' && COMMAND !== 'IGNORE') return; // a command this server does not have: nothing to do
    if (typeof DATA !== 'string' || !DATA.startsWith('/')) return c.ws.close(1007, `${COMMAND}'s DATA is an OSC address, "/..."`);
    if (COMMAND === 'LISTEN') listen(c, DATA);
    else ignore(c, DATA);
  };
  const refuseUpgrade = (socket: Duplex, status: string, body: { error: string; message: string }): void => {
    socket.end(`HTTP/1.1 ${status}\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n${JSON.stringify(body)}`);
  };
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const refused = refusedAccess(req.headers, access, machineNames);
    if (refused) return refuseUpgrade(socket, '403 Forbidden', refused);
    const peer = req.socket.remoteAddress ?? '';
    if (clients.size >= MAX_CLIENTS) return refuseUpgrade(socket, '503 Service Unavailable', problem('too_many_clients', `at most ${MAX_CLIENTS} WebSocket clients`));
    let mine = 0;
    for (const c of clients) if (c.peer === peer) mine++;
    if (mine >= MAX_CLIENTS_PER_PEER) return refuseUpgrade(socket, '503 Service Unavailable', problem('too_many_clients', `at most ${MAX_CLIENTS_PER_PEER} WebSocket clients from one address`));
    wss.handleUpgrade(req, socket, head, (ws) => {
      const c: Client = { ws, listens: new Set(), peer };
      clients.add(c);
      opts.onClients?.(clients.size);
      ws.on('message', (data, binary) => command(c, data, binary));
      ws.on('error', () => ws.terminate());
      ws.on('close', () => {
        clients.delete(c);
        opts.onClients?.(clients.size);
        for (const a of [...c.listens]) ignore(c, a);
      });
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (e) => opts.onError?.(e)); // after listening (accept failing: out of files, say): said, never thrown
  const address = server.address();

  return {
    port: typeof address === 'object' && address ? address.port : opts.port,
    get clients() {
      return clients.size;
    },
    setNamespace(next) {
      const was = tree;
      tree = new Tree(next.values(), opts.description);
      for (const [a, m] of next) {
        const old = methods.get(a);
        const value = was.find(a)?.VALUE;
        if (old && old.type === m.type && value) tree.find(a)!.VALUE = value;
      }
      methods = next;
      if (tree.shape() === was.shape()) return;
      const note = JSON.stringify({ COMMAND: 'PATH_CHANGED', DATA: '/' });
      for (const c of clients) c.ws.send(note);
    },
    played(source, messages) {
      for (const m of messages) {
        if (methods.get(m.address)?.source !== source) continue;
        tree.setValue(m.address, m.args);
        const set = listeners.get(m.address);
        if (!set) continue;
        const view = toBuffer({ address: m.address, args: m.args as OscArg[] });
        const packet = Buffer.from(view.buffer, view.byteOffset, view.byteLength);
        for (const c of set) {
          if (c.ws.bufferedAmount <= MAX_BUFFERED) c.ws.send(packet, { binary: true });
        }
      }
    },
    async close() {
      for (const c of clients) c.ws.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
