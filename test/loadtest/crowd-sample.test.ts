// The count check's samples during a rehearsal: the range a shown `n` must be in. An action sent and
// not yet answered may be stored, folded and shown before its ack reaches the phone (under load the
// ack trails the display), so the range's top counts its phone; a refused action leaves it.
import { describe, expect, it } from 'vitest';
import { CROWD_SAMPLE_LAG_MS, CrowdCheck, type CheckedControl } from '../../loadtest/crowd-check.js';

const VOTE: CheckedControl = { lid: 4, address: '/004', type: 'Index', options: [{ index: 0 }, { index: 1 }], aggregate: { mode: 'votes', windowMs: 600_000 } };

describe('the count check while phones vote', () => {
  it('lets the display count a vote sent and not yet acked, and no more', () => {
    const check = new CrowdCheck();
    check.stored(1, VOTE, 0, 1000);
    check.sent(2, VOTE);
    check.sent(1, VOTE); // a counted phone changing its vote: still one participant
    const [sample] = check.sample([VOTE], 1500, 0, () => 2);
    expect(sample!.expected).toEqual([1, 2]);
    check.refused(2, VOTE);
    expect(check.sample([VOTE], 3000, 0, () => 1)[0]!.expected).toEqual([1, 1]);
  });

  it('counts an acked vote once, whether or not it was in flight', () => {
    const check = new CrowdCheck();
    check.sent(7, VOTE);
    check.stored(7, VOTE, 1, 2000);
    expect(check.sample([VOTE], 2100, 0, () => 1)[0]!.expected).toEqual([1, 1]);
  });
});

describe('the count check at the edge of a window', () => {
  const HAZE: CheckedControl = { lid: 11, address: '/011', type: 'Slider', aggregate: { mode: 'trimmed-mean', windowMs: 5000 } };

  it('is not final while a value may have left the window at the gateway and not yet in the run: it was stored between its send and its ack, and is shown up to the lag later', () => {
    const check = new CrowdCheck();
    check.stored(1, HAZE, 0.5, 400, 100); // sent at 100, acked at 400: stored at the gateway at some moment between
    check.stored(2, HAZE, 0.7, 3000, 2900);
    // at 4000 both count wherever they were stored: settled
    expect(check.unsettledUntil(HAZE, 4000)).toBe(4000);
    // at 5200 phone 1's value left the gateway's window if it was stored before 200: the run still counts it
    expect(check.rows([HAZE], 5200, (a) => (a === '/011/n' ? [1] : [0.7]))[0]!.match).toBe(false);
    expect(check.unsettledUntil(HAZE, 5200)).toBe(400 + 5000 + CROWD_SAMPLE_LAG_MS);
    // once its band is over, the run and the display agree again
    expect(check.unsettledUntil(HAZE, 6500)).toBe(6500);
    expect(check.rows([HAZE], 6500, (a) => (a === '/011/n' ? [1] : [0.7]))[0]!.match).toBe(true);
  });
});
