// The bridge's memory of action ids it has finished: it must remember at least the last `capacity`
// ids, forget ids once 2 × capacity newer ones went by (bounded memory), and not mistake an id it
// never saw for one it did (64-bit fingerprints: checked here over a million fresh ids).
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SeenIds } from '../../bridge/seen-ids.js';

describe('SeenIds', () => {
  it('remembers at least the last capacity ids, and forgets one after 2 × capacity newer ones', () => {
    const seen = new SeenIds(1000);
    for (let i = 0; i < 5000; i++) {
      seen.add(`id-${i}`);
      expect(seen.has(`id-${i}`)).toBe(true);
      if (i >= 1000) expect(seen.has(`id-${i - 1000}`)).toBe(true); // the last 1000 all there
      if (i >= 2000) expect(seen.has(`id-${i - 2000}`)).toBe(false); // gone after 2 × capacity
    }
  });

  it('knows no id it was not given: a million fresh UUIDs and short ids against 100,000 remembered', () => {
    const seen = new SeenIds(100_000);
    for (let i = 0; i < 100_000; i++) seen.add(randomUUID());
    let false_ = 0;
    for (let i = 0; i < 500_000; i++) if (seen.has(randomUUID())) false_++;
    for (let i = 0; i < 500_000; i++) if (seen.has(`b${i}`)) false_++;
    expect(false_).toBe(0);
  });

  it('tells apart ids that differ in one character, in length, or beyond the Basic Latin range', () => {
    const seen = new SeenIds(16);
    for (const id of ['a', 'ab', 'é', '日本', '\u{1F600}', 'x'.repeat(200)]) seen.add(id);
    for (const id of ['a', 'ab', 'é', '日本', '\u{1F600}', 'x'.repeat(200)]) expect(seen.has(id)).toBe(true);
    for (const id of ['b', 'ba', 'abc', '', 'e', '日', '\u{1F601}', 'x'.repeat(199), 'x'.repeat(201)]) expect(seen.has(id)).toBe(false);
  });

  it('keeps working past many generations (the tables are reused, not grown)', () => {
    const seen = new SeenIds(100);
    for (let i = 0; i < 100_000; i++) seen.add(`g${i}`);
    expect(seen.has('g99999')).toBe(true);
    expect(seen.has('g99900')).toBe(true);
    expect(seen.has('g1')).toBe(false);
  });
});
