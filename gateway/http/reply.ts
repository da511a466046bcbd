// Writing replies: JSON bodies, the error body shape, status lines. Every write happens inside
// res.cork (one syscall) and only if the client has not gone away. What every reply writes the same
// (status lines, header names, the bodies and headers made once) goes to uWS as bytes made at start:
// a string costs uWS a UTF-8 length pass and a copy on every write.
import type { HttpResponse, RecognizedString } from 'uWebSockets.js';
import { AppError, ERRORS } from '../errors.js';

/** A reply header: strings, or bytes for one that never changes (see `headerBytes`). */
export type Header = readonly [RecognizedString, RecognizedString];

export interface Reply {
  status: number;
  /** serialised as JSON, unless `raw` is given */
  body: unknown;
  headers?: readonly Header[];
  /** a non-JSON body (the admin page's static files) */
  raw?: { contentType: string; data: Buffer | string };
  /** `body` already encoded: a reply made once and sent many times (see `prepared`) */
  json?: Buffer;
  /** a prepared JSON reply's head with each constant header list it was sent with (see `headOf`) */
  heads?: WeakMap<readonly Header[], Buffer>;
}

/** Text that never changes (ASCII), as the bytes uWS writes: made once, at start. */
const bytes = (text: string): Buffer => Buffer.from(text, 'latin1');

/** Headers as the text of their lines, each after the line before it (`\r\nname: value`). */
const linesOf = (headers: readonly (readonly [string, string])[]): string => headers.map(([k, v]) => `\r\n${k}: ${v}`).join('');

/** The header lists made by `headerBytes`, with their lines: the same on every reply, so a prepared reply's head may hold them. */
const constantLines = new WeakMap<readonly Header[], string>();

/** Headers that never change, as the bytes uWS writes. */
export function headerBytes(headers: readonly (readonly [string, string])[]): readonly Header[] {
  const list = headers.map(([k, v]) => [bytes(k), bytes(v)] as const);
  constantLines.set(list, linesOf(headers));
  return list;
}

const STATUS_TEXT: Record<number, string> = {
  200: '200 OK',
  204: '204 No Content',
  302: '302 Found',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  403: '403 Forbidden',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  409: '409 Conflict',
  413: '413 Content Too Large',
  415: '415 Unsupported Media Type',
  429: '429 Too Many Requests',
  500: '500 Internal Server Error',
  503: '503 Service Unavailable',
};
const STATUS_LINE = new Map(Object.entries(STATUS_TEXT).map(([code, text]) => [Number(code), bytes(text)]));
const REQUEST_ID = bytes('x-request-id');
const CONTENT_LENGTH = bytes('content-length');
const JSON_CONTENT_TYPE = ['content-type', 'application/json'] as const;
const [CONTENT_TYPE, JSON_TYPE] = headerBytes([JSON_CONTENT_TYPE])[0]!;

export function ok(body: unknown, headers?: Reply['headers']): Reply {
  return headers ? { status: 200, body, headers } : { status: 200, body };
}

/**
 * The same reply with its body encoded now, for an answer that never changes (no JSON.stringify per
 * request). A JSON reply with a body and no headers of its own also keeps its heads (`headOf`).
 */
export function prepared(reply: Reply): Reply {
  const oneHead = !reply.headers && !reply.raw && reply.status !== 204;
  return { ...reply, json: Buffer.from(JSON.stringify(reply.body)), ...(oneHead && { heads: new WeakMap() }) };
}

/**
 * A prepared reply's status line, the route's constant headers (`common`, made by `headerBytes`)
 * and its content type, as the bytes of one write: uWS's writeStatus sends `HTTP/1.1 <status>\r\n`,
 * so a status followed by header lines is the whole head but for the request id and the length,
 * which follow it. Four calls into uWS become one. Made once per reply and list; undefined for a
 * reply without heads (see `prepared`), or a list that may change.
 */
function headOf(reply: Reply, common: readonly Header[]): Buffer | undefined {
  let head = reply.heads?.get(common);
  if (head === undefined && reply.heads) {
    const lines = constantLines.get(common);
    if (lines === undefined) return undefined;
    head = bytes(`${STATUS_TEXT[reply.status] ?? reply.status}${lines}${linesOf([JSON_CONTENT_TYPE])}`);
    reply.heads.set(common, head);
  }
  return head;
}

/** `{"success": false, "error": {"code", "message"}}` with the code's status. */
export function errorReply(e: AppError, headers?: Reply['headers']): Reply {
  const body = { success: false, error: { code: e.code, message: e.message } };
  const all = [...(headers ?? []), ...e.headers];
  return all.length > 0 ? { status: e.status, body, headers: all } : { status: e.status, body };
}

export function internalError(): AppError {
  return new AppError('internal', ERRORS.internal.message);
}

/**
 * Writes the reply in one corked write. The caller makes sure the client is still there and it
 * answers once. `close` ends the connection after the reply (used when the request body was not
 * read, so it cannot be parsed as the next request); `headOnly` (a HEAD request) sends the headers
 * and the Content-Length but not the body.
 */
/**
 * Ends a HEAD answer: the length its GET would have, and no body. The header is written here and
 * uWS's endWithoutBody is called without a length: given one, uWS 20.51 waits for that many body
 * bytes that never come and closes the connection on the next request (keep-alive clients then
 * see "socket hang up").
 */
function endHead(res: HttpResponse, length: number): void {
  res.writeHeader(CONTENT_LENGTH, String(length));
  res.endWithoutBody();
}

export function send(res: HttpResponse, requestId: string, reply: Reply, common: readonly Header[], close = false, headOnly = false): void {
  res.cork(() => {
    const head = headOf(reply, common);
    if (head) {
      res.writeStatus(head);
      res.writeHeader(REQUEST_ID, requestId);
      if (headOnly) endHead(res, reply.json!.length);
      else res.end(reply.json, close);
      return;
    }
    res.writeStatus(STATUS_LINE.get(reply.status) ?? String(reply.status));
    res.writeHeader(REQUEST_ID, requestId);
    for (const [k, v] of common) res.writeHeader(k, v);
    if (reply.headers) for (const [k, v] of reply.headers) res.writeHeader(k, v);
    if (reply.status === 204) {
      res.endWithoutBody(0, close);
    } else if (reply.raw) {
      res.writeHeader(CONTENT_TYPE, reply.raw.contentType);
      if (headOnly) endHead(res, Buffer.byteLength(reply.raw.data));
      else res.end(reply.raw.data, close);
    } else {
      res.writeHeader(CONTENT_TYPE, JSON_TYPE);
      const body = reply.json ?? JSON.stringify(reply.body);
      if (headOnly) endHead(res, Buffer.byteLength(body));
      else res.end(body, close);
    }
  });
}
