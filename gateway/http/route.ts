// What a route is to the HTTP edge: the request head it reads, how it answers (a reply, a promise
// of one, or later through its responder), and the headers it may capture. Shared by the server,
// which mounts routes, each request's Exchange, and the routes themselves.
import type { Header, Reply } from './reply.js';

/**
 * The request headers a route may ask for (uWS only lets us read them before the first await), each
 * '' until read. A class, so each request's record is one allocation of a fixed shape.
 */
export class CapturedHeaders {
  'content-type' = '';
  'content-length' = '';
  authorization = '';
  'x-api-key' = '';
  origin = '';
  'x-request-id' = '';
  'access-control-request-method' = '';
  cookie = '';
  host = '';
  'x-csrf-token' = '';
  'x-forwarded-proto' = '';
  'x-forwarded-for' = '';
  'idempotency-key' = '';
}
export type CapturedHeader = keyof CapturedHeaders;

export interface RequestHead {
  readonly id: string;
  readonly method: string;
  readonly params: readonly string[];
  /** Only the route's `headers` (and those the server reads itself) are captured; the rest read as ''. */
  readonly headers: Readonly<Record<CapturedHeader, string>>;
  /** ms since the epoch, when the request arrived */
  readonly receivedAt: number;
  /** the peer's address, when the route asked for it */
  readonly remoteAddress: string;
  /** the query string (without "?"), when the route asked for it; '' otherwise */
  readonly query: string;
  /** True once the client is gone: its answer can no longer be sent (a closed or pipelined connection) */
  aborted(): boolean;
}

/** How a route that returned LATER answers, once: `reply`, or `fail` with the error to map. */
export interface Responder {
  reply(reply: Reply): void;
  fail(e: unknown): void;
}

/** A route's return value when it answers through its Responder (no promise per request). */
export const LATER = Symbol('answers through its responder');

export type Method = 'get' | 'post' | 'put' | 'del' | 'options' | 'any';

export interface Route {
  method: Method;
  pattern: string;
  /** number of `:param` segments in the pattern */
  params?: number;
  /** the request headers the route reads (each read costs a call into uWS, so only these are captured) */
  headers?: readonly CapturedHeader[];
  /** read a JSON body (415 unless application/json, 413 over the limit) */
  body?: boolean;
  /** this route's body limit, when it differs from the server's */
  maxBodyBytes?: number;
  /** capture the peer's address (uWS only gives it before the first await) */
  remoteAddress?: boolean;
  /** capture the query string (likewise) */
  query?: boolean;
  /** extra headers on every reply of this route, errors included (CORS) */
  replyHeaders?: (head: RequestHead) => readonly Header[];
  handle: (head: RequestHead, body: Buffer | null, respond: Responder) => Promise<Reply> | Reply | typeof LATER;
}
