// Entry ids: random UUIDs (version 4), made without the garbage crypto.randomUUID leaves per call.
// Node's builds each id from 20 string pieces (about 600 bytes for the young generation to collect,
// measured with `npm run bench:lab -- profile --heap`); this one takes its 16 random bytes from a pool
// filled by the same CSPRNG (randomFillSync) and writes the 36 characters into a buffer: a scratch
// one read out as a string, or straight into the stream entry's bytes (entry-batch.ts).
import { randomFillSync } from 'node:crypto';

const PER_FILL = 256;
const pool = Buffer.alloc(16 * PER_FILL);
let used = PER_FILL; // empty: the first call fills it
const text = Buffer.alloc(36);
const HEX = Buffer.from('0123456789abcdef', 'latin1');
/** byte index -> where its two hex digits go in the 8-4-4-4-12 form */
const AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];

/** Writes a random UUID, version 4, variant 10 (RFC 9562), in lower-case 8-4-4-4-12 form: 36 bytes of `to` from `at`. */
export function writeEntryId(to: Buffer, at: number): void {
  if (used === PER_FILL) {
    randomFillSync(pool);
    used = 0;
  }
  const o = 16 * used++;
  to[at + 8] = to[at + 13] = to[at + 18] = to[at + 23] = 0x2d; // the dashes
  for (let i = 0; i < 16; i++) {
    let b = pool[o + i]!;
    if (i === 6) b = (b & 0x0f) | 0x40; // version 4
    else if (i === 8) b = (b & 0x3f) | 0x80; // variant 10
    to[at + AT[i]!] = HEX[b >> 4]!;
    to[at + AT[i]! + 1] = HEX[b & 15]!;
  }
}

/** A random UUID, version 4, variant 10 (RFC 9562), in lower-case 8-4-4-4-12 form. */
export function entryId(): string {
  writeEntryId(text, 0);
  return text.toString('latin1', 0, 36);
}
