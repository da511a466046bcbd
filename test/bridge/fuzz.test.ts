// Seeded fuzz of the bridge's input: 10,000 entries written straight into a layout's stream
// (random field names and types, binary bytes, NULs, huge strings, missing fields, values OSC
// cannot carry, crowd summaries valid and broken, with valid entries interleaved) while the real
// audience-bridge process sends to a real UDP socket. It must never exit; every valid entry arrives
// exactly once (a summary as its crowd value, /n and, for sliders, /sd); every invalid one is
// in the dead-letter stream with a reason; the counters add up. Rerun a failure with FUZZ_SEED=<seed>.
import type { ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { ACTION_FIELD } from '../../schemas/action-entry.js';
import { actionStreamKey, deadLetterKey } from '../../schemas/redis-keys.js';
import { CONTROL_TYPES, type ActionEntry } from '../../schemas/types.js';
import type { AggregateMode, CrowdSummary } from '../../schemas/aggregate.js';
import { configFile, spawnBridge, stopProcess } from '../helpers/bridge.js';
import { eventually } from '../helpers/gateway.js';
import { bridgeOutcomes, scrape } from '../helpers/metrics.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';
import { fuzzSeed, seededRandom } from '../helpers/seeded-random.js';
import { UdpSink } from '../helpers/udp-sink.js';

const redis = useRedis();
const ENTRIES = 10_000;
const LAYOUT = 'fuzz';
const seed = fuzzSeed();
/** Every control type with each mode it takes. */
const SUMMARY_SHAPES: [CrowdSummary['type'], AggregateMode][] = [
  ['Slider', 'mean'], ['Slider', 'median'], ['Slider', 'trimmed-mean'], ['Toggle', 'fraction'], ['Index', 'votes'], ['XYPad', 'centroid'], ['Button', 'rate'],
];

const children: ChildProcess[] = [];
const sink = new UdpSink();
afterAll(async () => {
  for (const c of children) await stopProcess(c, 'SIGKILL');
  await sink.stop();
});

type Fields = (string | Buffer)[];
interface Planned {
  fields: Fields;
  /** the address it must arrive at, once; null: it must be dead-lettered */
  address: string | null;
  /** a crowd summary: the addresses its crowd value arrives at, once each (none: its window had ended, it is dropped as stale) */
  crowd?: string[];
}

function plan(random: () => number): Planned[] {
  const int = (n: number) => Math.floor(random() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
  const text = (max: number) => {
    let s = '';
    for (let i = int(max); i > 0; i--) {
      const cp = pick([0x20 + int(0x5f), 0xa0 + int(0x700), 0x1f300 + int(0x300), 0x4e00 + int(0x5000)]);
      s += String.fromCodePoint(cp);
    }
    return s;
  };
  const bytes = (n: number) => Buffer.from(Array.from({ length: n }, () => int(256)));
  let seq = 0;
  const valid = (): { entry: ActionEntry; address: string } => {
    const n = ++seq;
    const type = pick(CONTROL_TYPES);
    const value: ActionEntry['value'] = { Button: null, Slider: random(), Toggle: random() < 0.5, Index: int(2 ** 31), String: text(40), XYPad: [random(), random()] as [number, number] }[type];
    // its own lid and address: nothing coalesces, and each arrival names its entry
    const address = `/${n}`;
    return { entry: { v: 1, id: `fz-${seed}-${n}`, layoutId: LAYOUT, lid: n, address, type, value, ts: Date.now() }, address };
  };
  const json = (o: unknown) => JSON.stringify(o);
  /** A valid crowd summary of its own control (so it is sent once), and where its messages arrive. */
  const summary = (): { entry: CrowdSummary; addresses: string[] } => {
    const n = ++seq;
    const address = `/${n}`;
    const [type, mode] = pick(SUMMARY_SHAPES);
    const count = int(10_000);
    const base = { v: 2 as const, kind: 'summary' as const, id: `fs-${seed}-${n}`, layoutId: LAYOUT, lid: n, address, type, mode, windowMs: 600_000, source: `gw-${int(4)}`, seq: int(1000), ts: Date.now() + SUMMARY_AHEAD_MS, n: count };
    const bins = (f: () => number) => Array.from({ length: 101 }, f);
    const figures: Record<string, object> = {
      mean: { sum: random() * count, sumSq: random() * count },
      median: { sum: random() * count, sumSq: random() * count, hist: bins(() => int(100)) },
      'trimmed-mean': { sum: random() * count, sumSq: random() * count, hist: bins(() => int(100)), histSum: bins(() => random() * 50) },
      fraction: { sum: int(count + 1) },
      votes: { votes: Array.from({ length: 1 + int(8) }, () => int(count + 1)) },
      centroid: { sumX: random() * count, sumY: random() * count },
      rate: { sum: int(100_000) },
    };
    const slider = type === 'Slider';
    // some summaries carry zones (the same figures per zone, a zone with someone in it) and a cue
    const zoneNames = random() < 0.3 ? ['left', 'right', 'z_9'].slice(0, 1 + int(3)) : [];
    const zones = Object.fromEntries(zoneNames.map((z) => [z, { ...figures[mode], n: 1 + int(count + 1) }]));
    // a cue whose quorum is above n never fires: its settings are read, checked and kept
    const quorum = count + 1 + int(10);
    const cue = random() < 0.2 ? { cue: mode === 'votes' ? { share: 0.01 + random() * 0.99, quorum } : { above: 0.6, below: 0.4, holdMs: int(1000), quorum } } : {};
    return {
      entry: { ...base, ...figures[mode], ...cue, ...(zoneNames.length > 0 && { zones }) },
      addresses: [address, `${address}/n`, ...(slider ? [`${address}/sd`] : []), ...zoneNames.flatMap((z) => [`${address}/zone/${z}`, `${address}/zone/${z}/n`])],
    };
  };
  const brokenSummary: (() => unknown)[] = [
    () => ({ ...summary().entry, mode: 'votes', type: 'Slider' }), // a mode that does not fit the type
    () => ({ ...summary().entry, n: pick([-1, 1.5, '3', null]) }),
    () => ({ ...summary().entry, kind: pick(['action', '', 5]) }),
    () => ({ ...summary().entry, windowMs: pick([99, 600_001, 1.5]) }),
    () => ({ ...summary().entry, type: 'Slider', mode: 'median', sum: 1, sumSq: 1, hist: Array.from({ length: pick([0, 100, 102]) }, () => 1) }),
    () => ({ ...summary().entry, type: 'Index', mode: 'votes', votes: pick([[], [-1], [1.5], Array.from({ length: 1001 }, () => 1)]) }),
    () => ({ ...summary().entry, type: 'String', mode: 'mean', sum: 1, sumSq: 1 }),
    () => {
      const e = summary().entry as unknown as Record<string, unknown>;
      delete e[pick(['id', 'lid', 'address', 'mode', 'windowMs', 'source', 'seq', 'ts', 'n'])];
      return e;
    },
    () => ({ ...summary().entry, layoutId: 'another-layout' }),
    () => ({ ...summary().entry, extra: 1 }),
    () => ({ ...summary().entry, zones: pick([{ 'a b': { n: 1 } }, { left: { n: -1 } }, { left: { n: 1, extra: 2 } }, { left: 5 }, [1]]) }),
    () => ({ ...summary().entry, cue: pick([{ share: 0 }, { holdMs: -1 }, { above: 'x' }, { every: 1 }, 7]) }),
  ];
  const broken: (() => Fields)[] = [
    () => [text(10) || 'f', text(20)], // no action field
    () => [ACTION_FIELD, bytes(1 + int(200))], // binary bytes
    () => [ACTION_FIELD, text(30)], // not JSON
    () => [ACTION_FIELD, ''],
    () => [ACTION_FIELD, pick(['null', '[]', '42', '"s"', 'true', '{}'])],
    () => [ACTION_FIELD, '['.repeat(5000) + ']'.repeat(5000)], // deeply nested
    () => [ACTION_FIELD, json({ ...valid().entry, type: 'String', value: pick(['x', 'é', '😀']).repeat(random() < 0.1 ? 1_000_000 : 5_000 + int(50_000)) })], // huge string
    () => {
      const e = valid().entry as unknown as Record<string, unknown>;
      delete e[pick(['v', 'id', 'layoutId', 'lid', 'address', 'type', 'value', 'ts'])];
      return [ACTION_FIELD, json(e)];
    },
    () => [ACTION_FIELD, json({ ...valid().entry, type: 'String', value: `a\u0000${text(5)}` })], // NUL
    () => [ACTION_FIELD, json({ ...valid().entry, type: 'String', value: `a\ud800${text(5)}` })], // lone surrogate
    () => [ACTION_FIELD, json({ ...valid().entry, type: 'Index', value: pick([2 ** 31, 2 ** 53, -1, 1.5]) })],
    () => [ACTION_FIELD, json({ ...valid().entry, type: 'Slider', value: pick([1.5, -0.1, '0.5', null]) })],
    () => [ACTION_FIELD, json({ ...valid().entry, type: 'XYPad', value: pick([[0.5], [0.5, 2], 'xy', [0.1, 0.2, 0.3]]) })],
    () => [ACTION_FIELD, json({ ...valid().entry, type: 'Button', value: pick([1, true, 'go']) })],
    () => {
      // a field the entry does not have: a random name may be one it has ('v' with 1 is valid), so prefix those
      const e = valid().entry;
      const name = text(6) || 'extra';
      return [ACTION_FIELD, json({ ...e, [name in e ? `x-${name}` : name]: 1 })];
    },
    () => [ACTION_FIELD, json({ ...valid().entry, v: pick([0, 2, '1']) })],
    () => [ACTION_FIELD, json({ ...valid().entry, layoutId: 'another-layout' })],
    () => [ACTION_FIELD, json({ ...valid().entry, ts: Date.now() + 3_600_000 + int(1e12) })], // from the future
    () => [ACTION_FIELD, json({ ...valid().entry, address: pick(['002', '/a', '/', '/12345678901', '//1']) })],
    () => [ACTION_FIELD, json({ ...valid().entry, lid: pick([-1, 1.5, 2 ** 31, '5']) })],
    () => [ACTION_FIELD, json({ ...valid().entry, type: pick(['Knob', '', 'button']) })],
    () => [ACTION_FIELD, json({ ...valid().entry, id: pick(['', 'x'.repeat(65), 5]) })],
    () => [ACTION_FIELD, '\u0000' + json(valid().entry)],
    () => [ACTION_FIELD, json(pick(brokenSummary)())],
    () => [ACTION_FIELD, json(pick(brokenSummary)())],
  ];
  return Array.from({ length: ENTRIES }, () => {
    if (random() < 0.05) {
      const { entry, addresses } = summary();
      // one in five has a window that ended a minute ago: nothing in it counts any more
      if (random() < 0.2) return { fields: [ACTION_FIELD, json({ ...entry, windowMs: 100, ts: Date.now() - 60_000 })], address: null, crowd: [] };
      return { fields: [ACTION_FIELD, json(entry)], address: null, crowd: addresses };
    }
    if (random() < 0.35) {
      const { entry, address } = valid();
      return { fields: [ACTION_FIELD, json(entry)], address };
    }
    return { fields: pick(broken)(), address: null };
  });
}

/**
 * Valid summaries are stamped this far ahead (within the layout's maxAgeMs): a summary counts for
 * CROWD_LEASE_MS (3 s) from its ts, and writing 10,000 entries and reading them back can take longer
 * than that on a loaded machine, when a summary stamped at planning time would expire before the
 * bridge sends it and the test would count a message short.
 */
const SUMMARY_AHEAD_MS = 20_000;

describe(`bridge fuzz (seed ${seed})`, () => {
  it(`survives ${ENTRIES.toLocaleString('en')} random entries: each valid one arrives once, each invalid one is dead-lettered`, async () => {
    try {
      await sink.start();
      const prefix = randomPrefix();
      const key = actionStreamKey(prefix, LAYOUT);
      const file = configFile({ redisUrl: redis.get().server.url, prefix, bridgeId: 'fuzz', layouts: [{ layoutId: LAYOUT, maxAgeMs: 600_000, targets: [{ host: '127.0.0.1', port: sink.port }] }] });
      const { child, output } = await spawnBridge(['--config', file]);
      children.push(child);
      const opsPort = Number(/"opsPort":(\d+)/.exec(output())![1]); // on the line that says it runs

      const planned = plan(seededRandom(seed));
      const c = redis.get().client;
      const streamIds: string[] = [];
      for (let i = 0; i < planned.length; i += 250) {
        const p = c.pipeline();
        for (const e of planned.slice(i, i + 250)) p.xadd(key, '*', ...e.fields);
        for (const [err, id] of (await p.exec()) ?? []) {
          if (err) throw err;
          streamIds.push(id as string);
        }
      }
      const validCount = planned.filter((e) => e.address !== null).length;
      const summaryCount = planned.filter((e) => e.crowd && e.crowd.length > 0).length;
      const staleCount = planned.filter((e) => e.crowd?.length === 0).length;
      const crowdMessages = planned.reduce((n, e) => n + (e.crowd?.length ?? 0), 0);
      console.info(`fuzz: ${ENTRIES} entries written (${validCount} valid), seed ${seed}`);

      await eventually(async () => {
        const o = bridgeOutcomes(await scrape(opsPort), LAYOUT);
        return o.read === ENTRIES && o.pending === 0;
      }, 60_000);
      // the waits end as soon as their condition holds; their bounds fit a loaded 2-core machine (10 s was once missed there)
      await eventually(() => sink.messages.length >= validCount + crowdMessages, 30_000);
      await new Promise((r) => setTimeout(r, 200)); // nothing more may arrive

      expect(child.exitCode).toBeNull();
      expect(child.signalCode).toBeNull();
      const arrivals = new Map<string, number>();
      for (const m of sink.messages) arrivals.set(m.address, (arrivals.get(m.address) ?? 0) + 1);
      const expected = new Map([...planned.filter((e) => e.address !== null).map((e) => [e.address!, 1] as const), ...planned.flatMap((e) => (e.crowd ?? []).map((a) => [a, 1] as const))]);
      expect(arrivals).toEqual(expected);

      const dead = await c.xrange(deadLetterKey(prefix, LAYOUT), '-', '+');
      const deadIds = new Set(dead.map(([, f]) => f[f.indexOf('streamId') + 1]));
      const invalidIds = streamIds.filter((_, i) => planned[i]!.address === null && !planned[i]!.crowd);
      expect(deadIds.size).toBe(invalidIds.length);
      expect(invalidIds.every((id) => deadIds.has(id))).toBe(true);
      expect(dead.every(([, f]) => (f[f.indexOf('reason') + 1] ?? '').length > 0)).toBe(true);

      const o = bridgeOutcomes(await scrape(opsPort), LAYOUT);
      expect(o).toMatchObject({ read: ENTRIES, sent: validCount, deadLettered: invalidIds.length, summaries: summaryCount, droppedStale: staleCount, pending: 0, sum: ENTRIES });
      await eventually(async () => ((await c.xpending(key, 'bridge:fuzz')) as [number])[0] === 0, 15_000);
    } catch (e) {
      throw new Error(`bridge fuzz failed with seed ${seed} (rerun: FUZZ_SEED=${seed} npx vitest run test/bridge/fuzz.test.ts): ${(e as Error).message}`, { cause: e });
    }
  }, 120_000);
});
