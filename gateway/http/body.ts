// Reading a request body with a cap: chunks are copied (uWS detaches the ArrayBuffer after the
// callback) and reading stops at the first byte over the limit, so a huge body is never buffered.
import { isUtf8 } from 'node:buffer';
import type { HttpResponse } from 'uWebSockets.js';
import { AppError } from '../errors.js';

/** Where a body goes once read: `body` with all of it, or `tooLarge` at the first byte over the limit. */
export interface BodySink {
  body(body: Buffer): void;
  tooLarge(): void;
}

export function readBody(res: HttpResponse, maxBytes: number, sink: BodySink): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  res.onData((chunk, isLast) => {
    if (over) return;
    size += chunk.byteLength;
    if (size > maxBytes) {
      over = true;
      sink.tooLarge();
      return;
    }
    // Copied out of uWS's buffer into Node's pooled memory (a small body gets a slice of a shared
    // 8 KiB pool): no ArrayBuffer of its own per request for the garbage collector to sweep.
    chunks.push(Buffer.from(new Uint8Array(chunk)));
    if (isLast) sink.body(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
  });
}

/** True for `application/json`, with or without parameters such as charset. */
export function isJsonContentType(value: string): boolean {
  const semi = value.indexOf(';');
  return (semi < 0 ? value : value.slice(0, semi)).trim().toLowerCase() === 'application/json';
}

/** Parses a JSON body; invalid_json on failure, invalid UTF-8 included (it would otherwise turn into U+FFFD). */
export function parseJson(body: Buffer | null): unknown {
  if (body && !isUtf8(body)) throw new AppError('invalid_json', 'The request body is not valid UTF-8.');
  try {
    return JSON.parse(body ? body.toString('utf8') : '');
  } catch {
    throw new AppError('invalid_json');
  }
}
