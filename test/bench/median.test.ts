// `npm run bench` judges the /action target on the median of its interleaved pairs (bench/run.ts):
// one pair whose bare reply ran slow or fast must not decide it, and the pair is reported whole.
import { describe, expect, it } from 'vitest';
import { medianBy } from '../../bench/harness.js';

describe('medianBy', () => {
  it('picks the middle pair by ratio, whichever pair the outlier is', () => {
    const pairs = [
      { name: 'slow bare', ratio: 0.57 },
      { name: 'a', ratio: 0.497 },
      { name: 'b', ratio: 0.51 },
    ];
    expect(medianBy(pairs, (p) => p.ratio)).toEqual({ name: 'b', ratio: 0.51 });
    expect(medianBy([pairs[1]!, pairs[0]!, pairs[2]!], (p) => p.ratio).name).toBe('b');
    expect(pairs.map((p) => p.name)).toEqual(['slow bare', 'a', 'b']); // the caller's order is left alone
  });

  it('takes the upper middle of an even number, the one item of one, and refuses none', () => {
    expect(medianBy([4, 1, 3, 2], (n) => n)).toBe(3);
    expect(medianBy([7], (n) => n)).toBe(7);
    expect(() => medianBy([], (n: number) => n)).toThrow(/no items/);
  });
});
