// The map a crowd window keeps its participants in: oldest first for those that came now, and a
// side map for values handed over from another process with an earlier time, expired all the same.
import { describe, expect, it } from 'vitest';
import { ArrivalMap } from '../../gateway/crowd/arrival-map.js';

const WINDOW = 1000;
const expired = (m: ArrivalMap<{ at: number }>, now: number) => {
  const gone: string[] = [];
  m.expire(now - WINDOW, WINDOW, (sub) => gone.push(sub));
  return gone;
};

describe('ArrivalMap', () => {
  it('expires values in the order they came, handed-over ones with an earlier time included', () => {
    const m = new ArrivalMap<{ at: number }>();
    m.append('a', { at: 100 });
    m.append('b', { at: 500 });
    m.place('early', { at: 200 }, WINDOW); // handed over: came before b
    m.place('late', { at: 600 }, WINDOW); // came after everything: in order
    expect(m.size).toBe(4);
    expect(expired(m, 1100)).toEqual(['a']);
    expect(expired(m, 1200)).toEqual(['early']);
    expect(expired(m, 1500)).toEqual(['b']);
    expect(expired(m, 1600)).toEqual(['late']);
    expect(m.size).toBe(0);
  });

  it('a participant placed early and then acting again is held once, with its newer value', () => {
    const m = new ArrivalMap<{ at: number }>();
    m.append('b', { at: 500 });
    m.place('x', { at: 100 }, WINDOW);
    m.append('x', { at: 900 });
    expect(m.size).toBe(2);
    expect(m.get('x')).toEqual({ at: 900 });
    expect(expired(m, 1200)).toEqual([]); // x's early value is gone with its update, not expired
    expect(expired(m, 1500)).toEqual(['b']);
    expect(m.take('x')).toEqual({ at: 900 });
    expect(m.size).toBe(0);
  });

  it('gives up its oldest participant first, whichever map holds it', () => {
    const m = new ArrivalMap<{ at: number }>();
    m.append('a', { at: 100 });
    m.place('early', { at: 50 }, WINDOW);
    expect(m.takeOldest()?.[0]).toBe('a');
    expect(m.takeOldest()?.[0]).toBe('early');
    expect(m.takeOldest()).toBeUndefined();
  });
});
