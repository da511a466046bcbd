// What a phone shows under a look (schemas/light.ts shownAt), sampled every millisecond: a strobe
// asked past the flash limit flashes at most 3 times a second and says it was clamped; with reduced
// motion nothing flashes or moves; a wave reaches the seats in the order of its direction; a fade
// mixes from what was shown; before its start a look shows nothing new, and off hands back.
import { describe, expect, it } from 'vitest';
import { MAX_FLASHES_PER_SECOND, shownAt, type Shown, type TimedLook } from '../../schemas/light.js';

const AT = 1_000_000;

/** Flashes (dark to lit) of a phone under `look` over `seconds` from its start, sampled every ms. */
function flashes(look: TimedLook, seconds: number, reducedMotion = false): { flashes: number; clamped: boolean; levels: Set<number> } {
  // lit already just before the window: that flash began before it
  let lit = (shownAt(look, null, null, AT - 1, reducedMotion)?.brightness ?? 0) > 0;
  let n = 0;
  let clamped = false;
  const levels = new Set<number>();
  for (let t = AT; t < AT + seconds * 1000; t++) {
    const s = shownAt(look, null, null, t, reducedMotion)!;
    clamped ||= s.clamped;
    levels.add(s.brightness);
    if (s.brightness > 0 && !lit) n++;
    lit = s.brightness > 0;
  }
  return { flashes: n, clamped, levels };
}

describe('what a phone shows under a look', () => {
  it(`a strobe asked at 10 Hz flashes at most ${MAX_FLASHES_PER_SECOND} times a second, counted as clamped; one at 2 Hz as asked`, () => {
    const fast = flashes({ zone: 'left', at: AT, pattern: { type: 'strobe', hz: 10 } }, 5);
    expect(fast.flashes).toBeLessThanOrEqual(5 * MAX_FLASHES_PER_SECOND);
    expect(fast.flashes).toBeGreaterThanOrEqual(5 * MAX_FLASHES_PER_SECOND - 1);
    expect(fast.clamped).toBe(true);
    // no one-second window holds more than 3 flashes
    for (let start = 0; start < 4000; start += 50) {
      const w = flashes({ zone: 'left', at: AT - start, pattern: { type: 'strobe', hz: 10 } }, 1);
      expect(w.flashes, `window from ${start} ms`).toBeLessThanOrEqual(MAX_FLASHES_PER_SECOND);
    }
    const slow = flashes({ zone: 'left', at: AT, pattern: { type: 'strobe', hz: 2 } }, 5);
    expect(slow.flashes).toBe(10);
    expect(slow.clamped).toBe(false);
  });

  it('with reduced motion, neither a strobe nor a wave flashes or moves: one steady level', () => {
    const strobe = flashes({ zone: 'left', at: AT, brightness: 0.8, pattern: { type: 'strobe', hz: 10 } }, 3, true);
    expect(strobe.flashes).toBe(1);
    expect([...strobe.levels]).toEqual([0.8]);
    const wave = flashes({ zone: 'left', at: AT, pattern: { type: 'wave', direction: 0, speed: 2 } }, 3, true);
    expect([...wave.levels]).toEqual([1]);
  });

  it('a wave reaches the seats in the order of its direction, each at full brightness once a pass', () => {
    const look: TimedLook = { zone: 'left', at: AT, pattern: { type: 'wave', direction: 0, speed: 0.5, width: 0.2 } };
    const peakOf = (x: number) => {
      let best = -1;
      let when = 0;
      for (let t = AT; t < AT + 2000; t++) {
        const b = shownAt(look, null, { x, y: 0.3 }, t)!.brightness;
        if (b > best) [best, when] = [b, t];
      }
      return { best, when };
    };
    // toward x = 1 at 0.5 zone widths a second: the seat at 0.2 first (400 ms in), then every 400 ms the next
    const times = [0.2, 0.4, 0.6, 0.8].map(peakOf).map((p) => (expect(p.best).toBeGreaterThan(0.99), p.when - AT));
    for (const [i, t] of times.entries()) expect(Math.abs(t - 400 * (i + 1)), `seat ${0.2 * (i + 1)}`).toBeLessThanOrEqual(2);
  });

  it('a fade mixes from what was shown; before its start the look shows nothing new; off hands the screen back', () => {
    const before: Shown = { rgb: [0, 0, 0], brightness: 0, clamped: false };
    const look: TimedLook = { zone: 'left', at: AT, color: '#ff8000', brightness: 1, fadeMs: 200 };
    expect(shownAt(look, before, null, AT - 1)).toBe(before);
    expect(shownAt(look, before, null, AT + 100)).toEqual({ rgb: [128, 64, 0], brightness: 0.5, clamped: false });
    expect(shownAt(look, before, null, AT + 200)).toEqual({ rgb: [255, 128, 0], brightness: 1, clamped: false });
    expect(shownAt({ zone: 'left', at: AT, off: true }, before, null, AT)).toBeNull();
    expect(shownAt({ zone: 'left', at: AT }, null, null, AT)).toEqual({ rgb: [255, 255, 255], brightness: 1, clamped: false });
  });
});
