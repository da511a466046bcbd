// One request from its arrival to its one answer: the head its route reads, the sink its body is
// read into, and the responder it answers through. One object per request instead of a closure for
// each of these, so the young generation has less to collect on the hot path.
import type { HttpResponse } from 'uWebSockets.js';
import { AppError } from '../errors.js';
import type { BodySink } from './body.js';
import { errorReply, headerBytes, internalError, send, type Header, type Reply } from './reply.js';
import { LATER, type CapturedHeader, type RequestHead, type Responder, type Route } from './route.js';

const NO_HEADERS = headerBytes([]);

/** What an exchange needs of its server. */
export interface ExchangeHooks {
  /** the server's body limit, for a route without its own */
  readonly maxBodyBytes: number;
  /** an error that is not an AppError (answered 500) */
  readonly onError?: ((e: unknown, head: RequestHead) => void) | undefined;
  /** every answer: route pattern, status, seconds since arrival, the error code if any */
  readonly observe?: ((route: string, status: number, seconds: number, errorCode: string | null) => void) | undefined;
  /** the request was answered, or its client left first (each request settles once) */
  settled(): void;
}

export class Exchange implements RequestHead, Responder, BodySink {
  private gone = false;
  private done = false;
  private readonly started = performance.now();
  /** the route's headers on every reply, errors included (CORS) */
  private readonly extra: readonly Header[];
  /** the query string, when the route asked for it (`query: true`) */
  query = '';

  constructor(
    private readonly hooks: ExchangeHooks,
    private readonly route: Route,
    private readonly res: HttpResponse,
    readonly id: string,
    readonly method: string,
    readonly params: readonly string[],
    readonly headers: Readonly<Record<CapturedHeader, string>>,
    readonly receivedAt: number,
    readonly remoteAddress: string,
  ) {
    this.extra = route.replyHeaders ? route.replyHeaders(this) : NO_HEADERS;
  }

  aborted(): boolean {
    return this.gone;
  }

  /** uWS says the client left (at most once, before or after the answer). */
  abort(): void {
    if (!this.done) this.hooks.settled();
    this.gone = true;
  }

  get bodyLimit(): number {
    return this.route.maxBodyBytes ?? this.hooks.maxBodyBytes;
  }

  /** Hands the request to its route and answers with what it returns, now or when it settles. */
  run(body: Buffer | null): void {
    try {
      const out = this.route.handle(this, body, this);
      if (out === LATER) return;
      if (out instanceof Promise) out.then((r) => this.reply(r), (e: unknown) => this.fail(e));
      else this.reply(out);
    } catch (e) {
      this.fail(e);
    }
  }

  body(body: Buffer): void {
    this.run(body);
  }

  tooLarge(): void {
    this.reply(errorReply(new AppError('body_too_large', `The request body is larger than ${this.bodyLimit} bytes.`)), true);
  }

  /** Writes the answer unless the client left or it was answered already; `close` ends the connection after it. */
  reply(reply: Reply, close = false): void {
    if (this.gone || this.done) return;
    this.done = true;
    this.hooks.settled();
    send(this.res, this.id, reply, this.extra, close, this.method === 'head');
    const code = reply.status >= 400 ? ((reply.body as { error?: { code?: string } } | null)?.error?.code ?? null) : null;
    this.hooks.observe?.(this.route.pattern, reply.status, (performance.now() - this.started) / 1000, code);
  }

  /** Answers with the error's body; an error that is not an AppError is reported and answered 500. */
  fail(e: unknown): void {
    if (!(e instanceof AppError)) this.hooks.onError?.(e, this);
    this.reply(errorReply(e instanceof AppError ? e : internalError()));
  }
}
