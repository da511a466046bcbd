// Entry ids are random version-4 UUIDs: the form, the version and variant bits, uniqueness across
// many pool refills, and every free hex digit actually random.
import { describe, expect, it } from 'vitest';
import { entryId } from '../../gateway/store/entry-id.js';

const V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('entryId', () => {
  it('makes version-4 UUIDs, none repeated over 100,000 (about 390 refills of its pool)', () => {
    const ids = Array.from({ length: 100_000 }, entryId);
    for (const id of ids) expect(id).toMatch(V4);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('draws every free digit from all 16 values, and the variant digit from 8, 9, a and b', () => {
    const seen = Array.from({ length: 36 }, () => new Set<string>());
    for (let n = 0; n < 5_000; n++) [...entryId()].forEach((c, i) => seen[i]!.add(c));
    const fixed = new Map([[8, '-'], [13, '-'], [14, '4'], [18, '-'], [23, '-']]);
    seen.forEach((chars, i) => {
      if (fixed.has(i)) expect([...chars]).toEqual([fixed.get(i)]);
      else if (i === 19) expect([...chars].sort()).toEqual(['8', '9', 'a', 'b']);
      else expect(chars.size).toBe(16);
    });
  });
});
