// What a phone shows under a look (schemas/light.ts shownAt), sampled every millisecond: a strobe
// asked past the flash limit flashes at most 3 times a second and says it was clamped; with reduced
// motion nothing flashes or moves; a wave reaches the seats in the order of its direction; a fade
// mixes from what was shown; before its start a look shows nothing new, and off hands back. The
// screen's guard (FlashGuard) keeps any source, a desk's 44 Hz chase too, to 3 flashes a second,
// counted as an independent reader of WCAG 2.3.1 counts them, and with reduced motion fades only.
import { describe, expect, it } from 'vitest';
import { FLASH_STEP, FlashGuard, luminanceOf, MAX_FLASHES_PER_SECOND, shownAt, type Shown, type TimedLook } from '../../schemas/light.js';

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

const WHITE: Shown = { rgb: [255, 255, 255], brightness: 1, clamped: false };
const BLACK: Shown = { rgb: [0, 0, 0], brightness: 1, clamped: false };

/** Flash starts in a run of luminances: a rise by FLASH_STEP after a fall by as much (the first rise from dark counts). */
function flashTimes(run: { t: number; l: number }[]): number[] {
  const starts: number[] = [];
  let falling = true;
  let extreme = 0;
  for (const { t, l } of run) {
    if (falling) {
      if (l >= extreme + FLASH_STEP) {
        starts.push(t);
        falling = false;
        extreme = l;
      } else extreme = Math.min(extreme, l);
    } else if (l > extreme) extreme = l;
    else if (l <= extreme - FLASH_STEP) {
      falling = true;
      extreme = l;
    }
  }
  return starts;
}
const mostInOneSecond = (starts: number[]) => Math.max(0, ...starts.map((t) => starts.filter((u) => u >= t && u < t + 1000).length));

/** A screen at 60 frames a second for `seconds`, showing what `wanted(t)` asks through a guard. */
function screen(wanted: (t: number) => Shown | null, seconds: number, guard: FlashGuard): { t: number; l: number; shown: Shown | null }[] {
  const run: { t: number; l: number; shown: Shown | null }[] = [];
  for (let t = 0; t < seconds * 1000; t += 1000 / 60) {
    const shown = guard.show(wanted(t), t);
    run.push({ t, l: luminanceOf(shown), shown });
  }
  return run;
}

describe("the screen's flash guard", () => {
  it('holds a desk chase of black and white at 44 looks a second to 3 flashes in any second, counting what it held', () => {
    const guard = new FlashGuard();
    const chase = (t: number) => (Math.floor(t / (1000 / 44)) % 2 === 0 ? WHITE : BLACK);
    const run = screen(chase, 5, guard);
    expect(mostInOneSecond(flashTimes(run))).toBeLessThanOrEqual(MAX_FLASHES_PER_SECOND);
    expect(flashTimes(run).length).toBeGreaterThanOrEqual(5 * MAX_FLASHES_PER_SECOND - 1);
    expect(guard.clamped).toBeGreaterThan(0);
    // without the guard the same chase flashes 20 times and more a second
    expect(mostInOneSecond(flashTimes(screen(chase, 5, { show: (w: Shown | null) => w } as unknown as FlashGuard)))).toBeGreaterThan(20);
  });

  it('a strobe asked at 10 Hz, through the look and the guard, flashes at most 3 times in any second', () => {
    const look: TimedLook = { zone: 'left', at: 0, pattern: { type: 'strobe', hz: 10 } };
    const run = screen((t) => shownAt(look, null, null, t), 5, new FlashGuard());
    expect(mostInOneSecond(flashTimes(run))).toBeLessThanOrEqual(MAX_FLASHES_PER_SECOND);
    const calm = screen((t) => shownAt(look, null, null, t, true), 5, new FlashGuard(true));
    expect(flashTimes(calm).length).toBeLessThanOrEqual(1); // lit once, from dark, and steady after
    expect(new Set(calm.slice(120).map((f) => f.l)).size).toBe(1);
  });

  it('leaves alone what flashes no more than 3 times a second, and a fade of any length', () => {
    const guard = new FlashGuard();
    const slow = (t: number) => (Math.floor(t / 250) % 2 === 0 ? WHITE : BLACK); // 2 flashes a second
    for (const f of screen(slow, 3, guard)) expect(f.shown).toEqual(slow(f.t));
    const fade = (t: number): Shown => ({ rgb: [255, 255, 255], brightness: Math.min(1, t / 2000), clamped: false });
    const g2 = new FlashGuard();
    for (const f of screen(fade, 3, g2)) expect(f.shown).toEqual(fade(f.t));
    expect(guard.clamped + g2.clamped).toBe(0);
  });

  it('with reduced motion, a chase only fades: the luminance changes at most the full range in a second', () => {
    const guard = new FlashGuard(true);
    const chase = (t: number) => (Math.floor(t / 300) % 2 === 0 ? WHITE : BLACK);
    const run = screen(chase, 4, guard);
    for (let i = 1; i < run.length; i++) expect(Math.abs(run[i]!.l - run[i - 1]!.l)).toBeLessThanOrEqual((run[i]!.t - run[i - 1]!.t) / 1000 + 1e-3);
    expect(guard.clamped).toBeGreaterThan(0);
  });
});
