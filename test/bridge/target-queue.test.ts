// A target's queue: stream order kept across many small takes (the bridge takes a tick's worth at
// a time from a large backlog), continuous controls coalesced, refused batches put back in front.
import { describe, expect, it } from 'vitest';
import { TargetQueue, type Delivery } from '../../bridge/target-queue.js';
import type { ActionEntry } from '../../schemas/types.js';

let seq = 0;
function delivery(type: ActionEntry['type'], lid: number, value: ActionEntry['value'] = null): Delivery {
  const n = seq++;
  return { streamId: `${n}-0`, entry: { v: 1, id: `a${n}`, layoutId: 'show', lid, address: `/${lid}`, type, value, ts: n }, remaining: 1, alsoAck: [] };
}
const ids = (ds: Delivery[]) => ds.map((d) => d.entry.id);

describe('TargetQueue', () => {
  it('gives a large backlog back in stream order, a tick at a time', () => {
    const q = new TargetQueue();
    const all = Array.from({ length: 5000 }, (_, i) => delivery('Button', i % 7));
    for (const d of all) q.push(d);
    const taken: Delivery[] = [];
    while (q.length > 0) {
      const { send, coalesced } = q.take(300);
      expect(coalesced).toEqual([]);
      expect(send.length).toBeLessThanOrEqual(300);
      taken.push(...send);
      expect(q.length).toBe(all.length - taken.length);
    }
    expect(ids(taken)).toEqual(ids(all));
    expect(q.take(10)).toEqual({ send: [], coalesced: [] });
  });

  it('coalesces a continuous control to its newest value, at the newest position', () => {
    const q = new TargetQueue();
    const s1 = delivery('Slider', 2, 0.1);
    const b = delivery('Button', 1);
    const s2 = delivery('Slider', 2, 0.2);
    expect(q.push(s1)).toBeNull();
    expect(q.push(b)).toBeNull();
    expect(q.push(s2)).toBe(s1);
    const { send, coalesced } = q.take(10);
    expect(ids(send)).toEqual(ids([b, s2]));
    expect(ids(coalesced)).toEqual(ids([s1]));
  });

  it('puts a refused batch back in front of what is still queued, after many takes', () => {
    const q = new TargetQueue();
    const all = Array.from({ length: 3000 }, () => delivery('Index', 4, 1));
    for (const d of all) q.push(d);
    for (let i = 0; i < 20; i++) q.take(100); // 2,000 taken: the queue has compacted
    const { send } = q.take(100);
    q.requeue(send);
    const rest: Delivery[] = [];
    while (q.length > 0) rest.push(...q.take(250).send);
    expect(ids(rest)).toEqual(ids(all.slice(2000)));
  });
});
