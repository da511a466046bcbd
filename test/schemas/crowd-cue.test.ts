// The cue machine on seeded, noisy crowds: a threshold cue fires exactly once per real crossing of
// its hysteresis band (however the value hovers near either edge, and however briefly it pokes
// past one), a vote cue exactly once per arm however the share wobbles around `share`; the
// importer's refusals of cues that do not fit. Rerun a failure with FUZZ_SEED=<seed>.
import { describe, expect, it } from 'vitest';
import { aggregateProblem } from '../../schemas/aggregate.js';
import { CueMachine, voteLeader } from '../../schemas/crowd-cue.js';
import { fuzzSeed, seededRandom } from '../helpers/seeded-random.js';

const seed = fuzzSeed();
const STEP_MS = 20;

describe(`threshold cues on a noisy crowd (seed ${seed})`, () => {
  const above = 0.6;
  const below = 0.4;
  const holdMs = 300;

  /**
   * A fraction over time, built from planned segments: plateaus well inside "low" (<= 0.3) or
   * "high" (>= 0.7) that last longer than holdMs, and between them hovering inside the band with
   * noise and excursions past an edge shorter than holdMs. The real crossings are the changes of
   * plateau level: the number of cues the machine must send.
   */
  function crowd(random: () => number): { samples: { at: number; n: number; value: number }[]; crossings: number; naive: number } {
    const samples: { at: number; n: number; value: number }[] = [];
    let at = 0;
    let level: 'low' | 'high' = 'low';
    let crossings = 0;
    const push = (value: number, n = 50 + Math.floor(random() * 50)) => {
      samples.push({ at, n, value: Math.min(1, Math.max(0, value)) });
      at += STEP_MS;
    };
    for (let segment = 0; segment < 60; segment++) {
      const kind = random();
      if (kind < 0.35) {
        // a plateau, held long enough to count: maybe the other level
        const next: 'low' | 'high' = random() < 0.5 ? level : level === 'low' ? 'high' : 'low';
        if (next !== level) crossings++;
        level = next;
        const base = level === 'high' ? 0.72 + random() * 0.2 : 0.08 + random() * 0.2;
        for (let k = 0; k < (holdMs + 100 + random() * 600) / STEP_MS; k++) push(base + (random() - 0.5) * 0.04);
      } else {
        // hovering in the band, poking past an edge for less than holdMs now and then
        for (let k = 0; k < (200 + random() * 1500) / STEP_MS; k++) {
          const poke = random() < 0.05;
          if (poke) {
            const edge = random() < 0.5 ? above + 0.01 + random() * 0.1 : below - 0.01 - random() * 0.1;
            for (let j = 0; j < (random() * (holdMs - 2 * STEP_MS)) / STEP_MS; j++) push(edge + (random() - 0.5) * 0.005);
          }
          push(0.45 + random() * 0.1); // an excursion ends in the band: two in a row are not one long one
        }
        // back where the level is, so a plateau that follows decides
        const base = level === 'high' ? 0.75 : 0.25;
        for (let k = 0; k < (holdMs + 60) / STEP_MS; k++) push(base);
      }
    }
    // what a single threshold at 0.5 without hold would send: the chatter the cue exists to avoid
    let naive = 0;
    let on = false;
    for (const s of samples) {
      if (s.value >= 0.5 !== on) {
        on = !on;
        naive++;
      }
    }
    return { samples, crossings, naive };
  }

  it('fires 1 and 0 exactly once per real crossing of the band, nothing for hovering or for excursions shorter than holdMs', () => {
    const random = seededRandom(seed);
    for (let run = 0; run < 20; run++) {
      const { samples, crossings, naive } = crowd(random);
      const m = new CueMachine('fraction', { above, below, quorum: 10, holdMs });
      const fired: number[] = [];
      for (const s of samples) {
        const v = m.step({ n: s.n, value: [s.value] }, s.at);
        if (v !== null) fired.push(v);
      }
      expect(fired.length, `run ${run}: cues against real crossings (a plain threshold would have sent ${naive})`).toBe(crossings);
      fired.forEach((v, i) => expect(v, `run ${run}: cue ${i} alternates 1, 0, 1, ...`).toBe(i % 2 === 0 ? 1 : 0));
      expect(naive).toBeGreaterThan(crossings); // the crowd did chatter around the threshold
    }
  });

  it('needs its quorum: a crowd of fewer than quorum fires nothing, however high', () => {
    const m = new CueMachine('mean', { above, below, quorum: 10, holdMs });
    for (let at = 0; at < 5000; at += STEP_MS) expect(m.step({ n: 9, value: [0.95] }, at)).toBeNull();
    expect(m.step({ n: 10, value: [0.95] }, 5000)).toBeNull(); // the hold starts now
    expect(m.step({ n: 10, value: [0.95] }, 5000 + holdMs)).toBe(1);
  });
});

describe(`vote cues on a noisy vote (seed ${seed})`, () => {
  it('fire the winning index once per arm, however the share wobbles around `share`; a re-arm fires again', () => {
    const random = seededRandom(seed + 1);
    for (let run = 0; run < 20; run++) {
      const m = new CueMachine('votes', { share: 0.6, quorum: 20, holdMs: 500 });
      const fired: number[] = [];
      const winner = Math.floor(random() * 4);
      let at = 0;
      const votes = [0, 0, 0, 0];
      const play = (steps: number) => {
        for (let k = 0; k < steps; k++, at += STEP_MS) {
          // voters come in at random; the winner's share wobbles around 0.6 for a while and ends above it
          const cast = Math.floor(random() * 4);
          const toWinner = random() < 0.5 + (k / steps) * 0.4;
          votes[toWinner ? winner : (winner + 1 + (cast % 3)) % 4]!++;
          const v = m.step({ n: votes.reduce((a, b) => a + b, 0), value: votes }, at);
          if (v !== null) fired.push(v);
        }
      };
      play(500);
      expect(fired, `run ${run}`).toEqual([winner]);
      m.reset(); // a re-arm: the same crowd still agrees
      play(100);
      expect(fired, `run ${run} after re-arm`).toEqual([winner, winner]);
    }
  });

  it('knows no winner in a tie or without votes', () => {
    expect(voteLeader([3, 3, 1])).toBeNull();
    expect(voteLeader([0, 0])).toBeNull();
    expect(voteLeader([1, 5, 2])).toEqual({ index: 1, share: 5 / 8 });
  });
});

describe('cue settings the importer refuses', () => {
  it.each([
    ['Index', { mode: 'votes', cue: { quorum: 3 } }, 'a votes cue needs "share"'],
    ['Index', { mode: 'votes', cue: { share: 0.6, above: 0.5 } }, 'not "above" or "below"'],
    ['Toggle', { mode: 'fraction', cue: { above: 0.6 } }, 'needs "above" and "below"'],
    ['Toggle', { mode: 'fraction', cue: { above: 0.4, below: 0.6 } }, '"below" (0.6) must be less than its "above" (0.4)'],
    ['Toggle', { mode: 'fraction', cue: { above: 0.6, below: 0.4, share: 0.5 } }, 'not "share"'],
    ['XYPad', { mode: 'centroid', cue: { above: 0.6, below: 0.4 } }, 'a centroid takes no cue'],
  ])('a %s with %j: %s', (type, aggregate, message) => {
    expect(aggregateProblem(type, aggregate)).toContain(message);
  });
  it('accepts a vote cue and a threshold cue on every mode that takes one', () => {
    expect(aggregateProblem('Index', { mode: 'votes', cue: { share: 0.6, quorum: 10, holdMs: 500 } })).toBeNull();
    for (const [type, mode] of [['Slider', 'mean'], ['Slider', 'median'], ['Slider', 'trimmed-mean'], ['Toggle', 'fraction'], ['Button', 'rate']]) {
      expect(aggregateProblem(type, { mode, cue: { above: 0.6, below: 0.4, quorum: 10, holdMs: 300 } }), `${type} ${mode}`).toBeNull();
    }
  });
});
