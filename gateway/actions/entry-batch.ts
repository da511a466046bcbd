// A batch of stream entries as the bytes of one Lua call's arguments: each entry a RESP bulk
// string ("$<bytes>\r\n<text>\r\n"), written into one buffer as it is accepted. An action's entry
// is written byte by byte from its parts (entry-text.ts): no string is made of it, so nothing of it
// is left for the young generation to copy while the batch waits for Redis, and nothing measures
// or encodes it again on the way out (bench/README.md has the cost
// of an entry made as a string and handed to ioredis).
import type { ActionValue, Control } from '../../schemas/types.js';
import { ENTRY_PREFIX, ENTRY_TS, sharedBytes } from './entry-text.js';
import { writeEntryId } from '../store/entry-id.js';

/** A batch's first buffer: about 80 actions; it doubles as it fills. */
const FIRST_BYTES = 16 * 1024;

/** Writes ASCII text (digits, JSON of a number) at `at`; returns where it ends. */
function writeAscii(to: Buffer, at: number, text: string): number {
  for (let i = 0; i < text.length; i++) to[at + i] = text.charCodeAt(i);
  return at + text.length;
}

export class EntryBatch {
  private buf = Buffer.allocUnsafe(FIRST_BYTES);
  private end = 0;
  /** where each entry's bulk string starts ("$"), and where its text starts */
  private readonly starts: number[] = [];
  private readonly texts: number[] = [];

  get count(): number {
    return this.starts.length;
  }

  /** Room for `bytes` more. */
  private reserve(bytes: number): void {
    if (this.end + bytes <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.end + bytes) size *= 2;
    const grown = Buffer.allocUnsafe(size);
    this.buf.copy(grown, 0, 0, this.end);
    this.buf = grown;
  }

  /** The head of a bulk string of `bytes` bytes; returns where its text goes. */
  private head(bytes: number, room: number): number {
    const digits = String(bytes);
    this.reserve(digits.length + 5 + room);
    this.starts.push(this.end);
    let at = this.end;
    this.buf[at++] = 0x24; // $
    at = writeAscii(this.buf, at, digits);
    this.buf[at++] = 0x0d;
    this.buf[at++] = 0x0a;
    this.texts.push(at);
    return at;
  }

  private tail(at: number): void {
    this.buf[at++] = 0x0d;
    this.buf[at++] = 0x0a;
    this.end = at;
  }

  /** Adds an entry given as text (a crowd summary). */
  addText(text: string): void {
    const bytes = Buffer.byteLength(text);
    const at = this.head(bytes, bytes + 2);
    this.buf.write(text, at, bytes, 'utf8');
    this.tail(at + bytes);
  }

  /** Adds a new action's entry, written in place: the text encodeActionEntry makes of it, with a fresh id. */
  addAction(layoutId: string, control: Control, value: ActionValue, ts: number): void {
    const shared = sharedBytes(layoutId, control);
    const valueText = JSON.stringify(value);
    // JSON writes numbers, booleans, null and arrays of numbers in ASCII; only text may be longer in UTF-8
    const valueBytes = typeof value === 'string' ? Buffer.byteLength(valueText) : valueText.length;
    const tsText = String(ts);
    const bytes = ENTRY_PREFIX.length + 36 + shared.length + valueBytes + ENTRY_TS.length + tsText.length + 1;
    let at = this.head(bytes, bytes + 2);
    const buf = this.buf;
    at = writeAscii(buf, at, ENTRY_PREFIX);
    writeEntryId(buf, at);
    at += 36;
    buf.set(shared, at);
    at += shared.length;
    if (typeof value === 'string') at += buf.write(valueText, at, valueBytes, 'utf8');
    else at = writeAscii(buf, at, valueText);
    at = writeAscii(buf, at, ENTRY_TS);
    at = writeAscii(buf, at, tsText);
    buf[at++] = 0x7d; // }
    this.tail(at);
  }

  /** Where entry i's bulk string starts; for i = count, where the last one ends. */
  private startOf(i: number): number {
    return i < this.count ? this.starts[i]! : this.end;
  }

  /** The bulk strings of entries [from, to), to be sent. */
  bytes(from = 0, to = this.count): Buffer {
    return this.buf.subarray(this.startOf(from), this.startOf(to));
  }

  /** The text of entry i (for a call made again as plain arguments): its bulk string without the head and the closing CRLF. */
  text(i: number): string {
    return this.buf.toString('utf8', this.texts[i], this.startOf(i + 1) - 2);
  }

  /** A batch of the entries whose `keep` is true, in order. */
  kept(keep: readonly boolean[]): EntryBatch {
    const out = new EntryBatch();
    for (let i = 0; i < this.count; i++) {
      if (!keep[i]) continue;
      const piece = this.bytes(i, i + 1);
      out.reserve(piece.length);
      out.starts.push(out.end);
      out.texts.push(out.end + (this.texts[i]! - this.starts[i]!));
      piece.copy(out.buf, out.end);
      out.end += piece.length;
    }
    return out;
  }
}
