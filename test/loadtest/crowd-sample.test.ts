// The count check's samples during a rehearsal: the range a shown `n` must be in. An action sent and
// not yet answered may be stored, folded and shown before its ack reaches the phone (under load the
// ack trails the display), so the range's top counts its phone; a refused action leaves it.
import { describe, expect, it } from 'vitest';
import { CrowdCheck, type CheckedControl } from '../../loadtest/crowd-check.js';

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
