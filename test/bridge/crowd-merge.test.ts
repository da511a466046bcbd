// The bridge's side of crowd aggregation, without Redis: the table of newest summaries per source,
// and the datagrams a crowd value becomes (decoded with osc-min).
import { fromBuffer } from 'osc-min';
import { describe, expect, it } from 'vitest';
import { crowdDatagrams, crowdMessages } from '../../bridge/crowd.js';
import { CrowdTable } from '../../schemas/crowd-merge.js';
import { IMMEDIATE } from '../../bridge/osc.js';
import { CROWD_LEASE_MS, type CrowdSummary } from '../../schemas/aggregate.js';

const votes = (source: string, seq: number, ts: number, counts: number[]): CrowdSummary => ({
  v: 2, kind: 'summary', id: `${source}-${seq}`, layoutId: 'show', lid: 4, address: '/004', type: 'Index', mode: 'votes', windowMs: 1000, source, seq, ts, n: counts.reduce((a, b) => a + b, 0), votes: counts,
});

/** Every message in the datagrams: address and argument values. */
function decoded(datagrams: Buffer[]): [string, unknown[]][] {
  const out: [string, unknown[]][] = [];
  const walk = (p: ReturnType<typeof fromBuffer>): void => {
    if (p.oscType === 'bundle') p.elements.forEach(walk);
    else out.push([p.address, p.args.map((a) => (a as { value: unknown }).value)]);
  };
  for (const d of datagrams) walk(fromBuffer(d));
  return out;
}

describe('crowd table', () => {
  it('merges the newest summary of each source, ignores an older one, and drops a source once its summary runs out', () => {
    const table = new CrowdTable();
    table.offer(votes('a', 2, 1000, [1, 2, 0]));
    table.offer(votes('a', 1, 1000, [9, 9, 9])); // older seq: ignored
    table.offer(votes('b', 1, 1500, [0, 0, 4]));
    expect(table.changed(1600).map((v) => [v.value, v.n])).toEqual([[[1, 2, 4], 7]]);
    expect(table.changed(1700)).toEqual([]); // nothing changed
    expect(table.changed(2000).map((v) => [v.value, v.n])).toEqual([[[0, 0, 4], 4]]); // a's summary ran out at 1000 + 1000
  });
});

describe('crowd leases', () => {
  const long = (source: string, seq: number, ts: number, counts: number[]): CrowdSummary => ({ ...votes(source, seq, ts, counts), windowMs: 600_000 });

  it('drops a source that has not refreshed within CROWD_LEASE_MS, however long its window', () => {
    const table = new CrowdTable();
    table.offer(long('a', 1, 1000, [5, 0, 0]));
    table.offer(long('b', 1, 1000, [0, 3, 0]));
    expect(table.changed(1100).map((v) => [v.value, v.n])).toEqual([[[5, 3, 0], 8]]);
    table.offer(long('b', 2, 2000, [0, 3, 0])); // b refreshes its lease; a has died
    expect(table.changed(2000)).toEqual([]); // a refresh that changes nothing sends nothing to the displays
    expect(table.changed(1000 + CROWD_LEASE_MS - 1)).toEqual([]);
    expect(table.changed(1000 + CROWD_LEASE_MS).map((v) => [v.value, v.n])).toEqual([[[0, 3, 0], 3]]);
  });

  it('counts a retracted source (an empty summary) as nobody at once', () => {
    const table = new CrowdTable();
    table.offer(long('a', 1, 1000, [5, 0, 0]));
    table.offer(long('b', 1, 1000, [0, 3, 0]));
    table.changed(1100);
    table.offer(long('a', 2, 1200, [0, 0, 0]));
    expect(table.changed(1200).map((v) => [v.value, v.n])).toEqual([[[0, 3, 0], 3]]);
  });
});

describe('crowd datagrams', () => {
  it('sends counts beyond an OSC int32, merged over sources, as the largest int32 instead of failing the bundle', () => {
    const table = new CrowdTable();
    table.offer(votes('a', 1, 1000, [2 ** 31 - 1, 1, 0]));
    table.offer(votes('b', 1, 1000, [2 ** 31 - 1, 1, 0]));
    const packed = crowdDatagrams(table.changed(1100).map(crowdMessages), IMMEDIATE, 1400);
    expect(decoded(packed.datagrams)).toEqual([
      ['/004', [2 ** 31 - 1, 2, 0]],
      ['/004/n', [2 ** 31 - 1]],
    ]);
    expect(packed.messages).toBe(2);
  });

  it('puts every control in one bundle while they fit, else one bundle each', () => {
    const table = new CrowdTable();
    for (let lid = 0; lid < 40; lid++) table.offer({ ...votes('a', 1, 1000, [1, 2, 3]), lid, address: `/${lid}` });
    const values = table.changed(1100).map(crowdMessages);
    expect(crowdDatagrams(values.slice(0, 3), IMMEDIATE, 1400).datagrams).toHaveLength(1);
    const split = crowdDatagrams(values, IMMEDIATE, 1400);
    expect(split.datagrams).toHaveLength(40);
    expect(decoded(split.datagrams)).toHaveLength(80);
  });
});
