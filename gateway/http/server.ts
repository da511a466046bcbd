// The uWS edge: mounts routes with the discipline uWS demands (onAborted before any await, headers
// read synchronously, bodies copied, replies corked), gives each request an id, maps thrown errors
// to the error body, and closes gracefully (stop listening, let in-flight requests finish).
import { randomFillSync } from 'node:crypto';
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import { AppError } from '../errors.js';
import { isJsonContentType, readBody } from './body.js';
import { Exchange, type ExchangeHooks } from './exchange.js';
import { errorReply } from './reply.js';
import { CapturedHeaders, type CapturedHeader, type Route } from './route.js';
import { nativeUws } from './uws.js';

/** The server's settings: what each request's Exchange uses of them, and the clock of `receivedAt`. */
export interface ServerOptions extends Omit<ExchangeHooks, 'settled'> {
  now?: () => number;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;
/**
 * Headers that are refused when sent empty. uWS trims bytes >= 0x80 from both ends of a header
 * value (as if they were spaces), so a value made only of such bytes reads as '', which getHeader
 * cannot tell from no header: the one pass over the headers can, and records it as one space,
 * which no trimmed value can be and which the route's own check refuses.
 */
const REFUSED_EMPTY = new Set<string>(['idempotency-key']);
const SENT_EMPTY = ' ';
/** Random bytes for request ids, drawn 4 KiB at a time (one id: 60 ns instead of randomUUID's 100). */
const idPool = Buffer.alloc(4096);
let idOffset = idPool.length;

/**
 * A fresh request id: 64 random bits as 16 hex characters, so an id says nothing of the process
 * (its request count, its restarts) and two never meet in practice (one pair in 2^32 ids).
 */
export function requestId(): string {
  if (idOffset + 8 > idPool.length) {
    randomFillSync(idPool);
    idOffset = 0;
  }
  return idPool.toString('hex', idOffset, (idOffset += 8));
}

/** The parameters of a route without any (shared: nothing writes to it). */
const NO_PARAMS: readonly string[] = [];

export class HttpServer {
  readonly app: TemplatedApp;
  private listenSocket: us_listen_socket | null = null;
  private inFlight = 0;
  private readonly now: () => number;

  /** What each request's Exchange needs of its server. */
  private readonly hooks: ExchangeHooks;

  constructor(opts: ServerOptions) {
    this.app = nativeUws().App();
    this.now = opts.now ?? Date.now;
    this.hooks = { ...opts, settled: () => void this.inFlight-- };
  }

  /** Every method mounted on each pattern (with HEAD for GET), for the 405 answers' Allow header. */
  private readonly allowed = new Map<string, Set<string>>();

  /** Mounts a route; a GET route also answers HEAD (the same answer without its body). */
  mount(route: Route): this {
    const register = this.app[route.method].bind(this.app) as (p: string, h: (res: HttpResponse, req: HttpRequest) => void) => void;
    // What each request of the route needs that does not change: its headers and, but for `any`, its
    // method (lower case, as uWS's getMethod says it).
    const headers = this.headersOf(route);
    const method = route.method === 'del' ? 'delete' : route.method;
    if (method === 'any') register(route.pattern, (res, req) => this.serve(route, headers, req.getMethod(), res, req));
    else register(route.pattern, (res, req) => this.serve(route, headers, method, res, req));
    if (method === 'get') this.app.head(route.pattern, (res, req) => this.serve(route, headers, 'head', res, req));
    if (method !== 'any') {
      const methods = this.allowed.get(route.pattern) ?? new Set<string>();
      for (const m of method === 'get' ? ['GET', 'HEAD'] : [method.toUpperCase()]) methods.add(m);
      this.allowed.set(route.pattern, methods);
    }
    return this;
  }

  /** The mounted patterns with their methods, as an Allow header says them (derived, never restated). */
  patterns(): { pattern: string; allow: string }[] {
    const order = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS'];
    return [...this.allowed].map(([pattern, methods]) => ({ pattern, allow: [...methods].sort((a, b) => order.indexOf(a) - order.indexOf(b)).join(', ') }));
  }

  /** `method` is what uWS's getMethod says (lower case), `wanted` the route's headers (`headersOf`). */
  private serve(route: Route, wanted: readonly CapturedHeader[], method: string, res: HttpResponse, req: HttpRequest): void {
    this.inFlight++;
    const headers = new CapturedHeaders();
    const contentLengths = this.readHeaders(req, route, wanted, headers);
    const given = headers['x-request-id'];
    const id = given && REQUEST_ID.test(given) ? given : requestId();
    const params = route.params ? paramsOf(req, route.params) : NO_PARAMS;
    // a route that reads X-Forwarded-* needs the peer too: only a trusted proxy's are believed
    const remoteAddress = route.remoteAddress === true || wanted.includes('x-forwarded-proto') || wanted.includes('x-forwarded-for') ? Buffer.from(res.getRemoteAddressAsText()).toString() : '';
    const ex = new Exchange(this.hooks, route, res, id, method, params, headers, this.now(), remoteAddress);
    if (route.query === true) ex.query = req.getQuery() ?? '';
    res.onAborted(() => ex.abort());
    if (!route.body) return ex.run(null);
    // RFC 9112 6.3: several Content-Length headers frame the body ambiguously (a proxy in front may
    // read another one): refuse and close. (uWS itself answers 400 to Transfer-Encoding with
    // Content-Length before any route sees it.)
    if (contentLengths > 1) return ex.reply(errorReply(new AppError('invalid_request')), true);
    // An early reply leaves the body unread, so the connection is closed after it.
    if (!isJsonContentType(headers['content-type'])) return ex.reply(errorReply(new AppError('unsupported_media_type')), true);
    if (Number(headers['content-length'] || '0') > ex.bodyLimit) return ex.tooLarge();
    readBody(res, ex.bodyLimit, ex);
  }

  /**
   * Reads the route's headers into `into` (the first of repeated ones, as getHeader does) and
   * returns how many Content-Length headers came. A route with a body needs every header looked at
   * for the framing check, so its headers are taken in that same one pass (uWS makes a string of
   * each header either way); any other route reads just its own with getHeader.
   */
  private readHeaders(req: HttpRequest, route: Route, wanted: readonly CapturedHeader[], into: Record<CapturedHeader, string>): number {
    if (!route.body) {
      for (const h of wanted) into[h] = req.getHeader(h);
      return 0;
    }
    let lengths = 0;
    let taken = 0; // bit i: wanted[i] was read
    req.forEach((name, value) => {
      if (name === 'content-length') lengths++;
      const i = wanted.indexOf(name as CapturedHeader);
      if (i >= 0 && (taken & (1 << i)) === 0) {
        taken |= 1 << i;
        // the list's own string: a property name V8 knows, unlike the fresh `name`
        into[wanted[i]!] = value === '' && REFUSED_EMPTY.has(name) ? SENT_EMPTY : value;
      }
    });
    return lengths;
  }

  /** The headers read for a route: its own, the request id, and the body's type and length. */
  private headersOf(route: Route): readonly CapturedHeader[] {
    return [...new Set<CapturedHeader>(['x-request-id', ...(route.body ? (['content-type', 'content-length'] as const) : []), ...(route.headers ?? [])])];
  }

  /** Listens and resolves with the bound port (useful with port 0). */
  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      this.app.listen(host, port, (socket) => {
        // uWS gives no reason; the usual one is a port another process holds
        if (!socket) return reject(new Error(`cannot listen on ${host}:${port}: the port is in use, or the address is not this host's (PORT and HOST choose others)`));
        this.listenSocket = socket;
        resolve(nativeUws().us_socket_local_port(socket));
      });
    });
  }

  /** Stops accepting connections, then waits (at most `drainMs`) for in-flight requests to be answered. */
  async close(drainMs = 5000): Promise<void> {
    if (this.listenSocket) nativeUws().us_listen_socket_close(this.listenSocket);
    this.listenSocket = null;
    const until = Date.now() + drainMs;
    while (this.inFlight > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
  }
}

function paramsOf(req: HttpRequest, count: number): string[] {
  const params: string[] = [];
  for (let i = 0; i < count; i++) params.push(decodeURIComponentSafe(req.getParameter(i) ?? ''));
  return params;
}

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
