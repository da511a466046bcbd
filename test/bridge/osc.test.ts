// The OSC mapping, byte for byte, and the datagram packer, which writes each message straight into
// its datagram: held to osc-min's encoder (test/helpers/osc-oracle.ts) on seeded random entries.
import { fromBuffer, type OscPacketInput, type OscPacketOutput } from 'osc-min';
import { describe, expect, it } from 'vitest';
import { IMMEDIATE, messageSize, oscRefusal, packDatagrams, timetag, writeMessage, type BooleanMode, type OscEntry, type OscMessage, type TimedGroup } from '../../bridge/osc.js';
import type { ActionEntry } from '../../schemas/types.js';
import { oscMinBundle, oscMinEncode, oscMinMessage } from '../helpers/osc-oracle.js';
import { fuzzSeed, seededRandom } from '../helpers/seeded-random.js';

const hex = (b: Buffer) => b.toString('hex');
/** The bridge's bytes for one message, written into a buffer of its computed size. */
function encode(e: OscMessage, booleans: BooleanMode): Buffer {
  const buf = Buffer.alloc(messageSize(e, booleans), 0xee); // not zeroed: the writer must write every byte
  expect(writeMessage(buf, 0, e, booleans)).toBe(buf.length);
  return buf;
}
const msg = (type: ActionEntry['type'], value: ActionEntry['value'], booleans: BooleanMode = 'int') => hex(encode({ address: '/001', type, value }, booleans));

// "/001" + NUL padded to 8 bytes
const ADDR = '2f30303100000000';

describe('action -> OSC message bytes', () => {
  it.each([
    ['Button -> int32 1', 'Button', null, 'int', `${ADDR}2c690000` + '00000001'],
    ['Slider 0.5 -> float32', 'Slider', 0.5, 'int', `${ADDR}2c660000` + '3f000000'],
    ['Slider 1 -> float32', 'Slider', 1, 'int', `${ADDR}2c660000` + '3f800000'],
    ['Slider -0 -> +0', 'Slider', -0, 'int', `${ADDR}2c660000` + '00000000'],
    ['Toggle true -> int32 1', 'Toggle', true, 'int', `${ADDR}2c690000` + '00000001'],
    ['Toggle false -> int32 0', 'Toggle', false, 'int', `${ADDR}2c690000` + '00000000'],
    ['Toggle true -> T', 'Toggle', true, 'TF', `${ADDR}2c540000`],
    ['Toggle false -> F', 'Toggle', false, 'TF', `${ADDR}2c460000`],
    ['Index 2 -> int32', 'Index', 2, 'int', `${ADDR}2c690000` + '00000002'],
    ['String -> OSC string', 'String', 'hi', 'int', `${ADDR}2c730000` + '68690000'],
    ['String of 4 -> padded with a full NUL word', 'String', 'abcd', 'int', `${ADDR}2c730000` + '6162636400000000'],
    ['XYPad -> two float32', 'XYPad', [0.25, 1], 'int', `${ADDR}2c666600` + '3e800000' + '3f800000'],
    ['XYPad -0 -> +0', 'XYPad', [-0, 0.5], 'int', `${ADDR}2c666600` + '00000000' + '3f000000'],
  ] as const)('%s', (_what, type, value, booleans, bytes) => {
    expect(msg(type, value as ActionEntry['value'], booleans)).toBe(bytes);
  });

  it('refuses what OSC cannot carry, before any tick (the entry schema refuses these first)', () => {
    expect(oscRefusal({ address: '/001', type: 'String', value: 'a\u0000b' })).toMatch(/U\+0000/);
    expect(oscRefusal({ address: '/001', type: 'Index', value: 2 ** 31 })).toMatch(/32-bit/);
    expect(oscRefusal({ address: '/001', type: 'Index', value: 2 ** 31 - 1 })).toBeNull();
    expect(oscRefusal({ address: '/001', type: 'String', value: 'é😀' })).toBeNull();
  });
});

/** A random message the bridge sends: an entry of every type, odd floats, strings of every UTF-8 length, or a routed message of typed arguments. */
function randomEntry(rand: () => number): OscMessage {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const address = `/${Math.floor(rand() * 10 ** (1 + Math.floor(rand() * 9)))}`;
  const unit = () => pick([0, -0, 1, 0.5, 1e-9, rand(), Math.fround(rand())]);
  const text = () => Array.from({ length: Math.floor(rand() * 12) }, () => pick(['a', 'é', '€', '😀', ' ', '\n', 'Z'])).join('');
  switch (pick(['Button', 'Slider', 'Toggle', 'Index', 'String', 'XYPad', 'Args'] as const)) {
    case 'Args':
      return {
        address: `/${text().replace(/[^a-zA-Z]/g, 'x')}/route`,
        type: 'Args',
        value: Array.from({ length: Math.floor(rand() * 6) }, () =>
          pick([{ type: 'integer' as const, value: pick([0, -1, 2 ** 31 - 1, -(2 ** 31), Math.floor(rand() * 1e6)]) }, { type: 'float' as const, value: unit() * 255 }, { type: 'string' as const, value: text() }, { type: 'true' as const }, { type: 'false' as const }]),
        ),
      };
    case 'Button':
      return { address, type: 'Button', value: null };
    case 'Slider':
      return { address, type: 'Slider', value: unit() };
    case 'Toggle':
      return { address, type: 'Toggle', value: rand() < 0.5 };
    case 'Index':
      return { address, type: 'Index', value: pick([0, 1, 7, 2 ** 31 - 1, Math.floor(rand() * 1000)]) };
    case 'String':
      return { address, type: 'String', value: text() };
    case 'XYPad':
      return { address, type: 'XYPad', value: [unit(), unit()] };
  }
}

describe('the bridge encoder against osc-min (seeded)', () => {
  it('writes every message as osc-min encodes it, and packs datagrams osc-min would make of the same bundles', () => {
    const seed = fuzzSeed();
    const rand = seededRandom(seed);
    try {
      for (let round = 0; round < 300; round++) {
        const booleans: BooleanMode = rand() < 0.5 ? 'int' : 'TF';
        const groups: TimedGroup[] = Array.from({ length: 1 + Math.floor(rand() * 4) }, (_, i) => ({
          timetag: rand() < 0.3 ? IMMEDIATE : timetag(1_700_000_000_000 + i * 7 + Math.floor(rand() * 1000)),
          entries: Array.from({ length: 1 + Math.floor(rand() * 40) }, () => randomEntry(rand)),
        }));
        for (const e of groups.flatMap((g) => g.entries)) expect(hex(encode(e, booleans))).toBe(hex(oscMinEncode(e, booleans)));
        const limit = 200 + Math.floor(rand() * 1400);
        const { datagrams } = packDatagrams(groups, booleans, limit);
        // Rebuild each datagram with osc-min from its own decoding (the structure) and compare the bytes.
        const decoded = datagrams.map((d) => fromBuffer(d));
        datagrams.forEach((d, i) => expect(hex(d)).toBe(hex(oscMinBundle((decoded[i] as { timetag: [number, number] }).timetag, elementsOf(decoded[i]!)))));
        // ... and the messages, in order, are those of the groups, each under its group's timetag.
        const sent = decoded.flatMap((p) => taggedMessages(p));
        const want = groups.flatMap((g) => g.entries.map((e) => ({ address: oscMinMessage(e, booleans).address, timetag: g.timetag })));
        expect(sent).toEqual(want);
        for (const d of datagrams) if (d.length > limit) expect(fromBuffer(d).oscType === 'bundle' && (fromBuffer(d) as { elements: unknown[] }).elements).toHaveLength(1);
      }
    } catch (e) {
      throw new Error(`OSC encoder fuzz failed with seed ${seed} (replay: FUZZ_SEED=${seed}): ${(e as Error).message}`);
    }
  });
});

/** Each message of a decoded datagram with the timetag of the bundle that holds it. */
function taggedMessages(p: OscPacketOutput): { address: string; timetag: [number, number] }[] {
  if (p.oscType !== 'bundle') throw new Error('a datagram is not a bundle');
  return p.elements.flatMap((e) => (e.oscType === 'bundle' ? taggedMessages(e) : [{ address: e.address, timetag: p.timetag }]));
}

/** osc-min input rebuilding a decoded bundle's elements (messages keep their decoded args). */
function elementsOf(p: OscPacketOutput): OscPacketInput[] {
  if (p.oscType !== 'bundle') throw new Error('a datagram is not a bundle');
  return p.elements.map((e) => (e.oscType === 'bundle' ? { timetag: e.timetag, elements: elementsOf(e) } : { address: e.address, args: e.args as never }));
}

describe('timetags and bundles', () => {
  it('converts Unix ms to NTP seconds and 2^-32 fractions', () => {
    expect(timetag(1_700_000_000_500)).toEqual([1_700_000_000 + 2_208_988_800, 2 ** 31]);
    expect(timetag(0)).toEqual([2_208_988_800, 0]);
    expect(timetag(null)).toEqual(IMMEDIATE);
  });

  it('encodes a bundle as #bundle, timetag, size-prefixed elements', () => {
    const e: OscEntry = { address: '/001', type: 'Button', value: null };
    const { datagrams } = packDatagrams([{ timetag: [1, 2], entries: [e] }], 'int', 1400);
    expect(datagrams.map(hex)).toEqual(['2362756e646c6500' + '00000001' + '00000002' + '00000010' + hex(encode(e, 'int'))]);
  });
});

function flatten(p: OscPacketOutput, tag: [number, number] | null = null): { address: string; tag: [number, number] | null; arg: unknown }[] {
  if (p.oscType === 'message') return [{ address: p.address, tag, arg: (p.args[0] as { value?: unknown } | undefined)?.value }];
  return p.elements.flatMap((e) => flatten(e, p.timetag[0] === 0 && p.timetag[1] === 1 && e.oscType === 'bundle' ? null : p.timetag));
}

describe('packing datagrams', () => {
  const m = (i: number): OscEntry => ({ address: `/${String(i).padStart(3, '0')}`, type: 'Index', value: i });

  it('keeps one timetag per datagram flat, and every datagram within the limit', () => {
    const groups = [{ timetag: IMMEDIATE, entries: Array.from({ length: 200 }, (_, i) => m(i)) }];
    const { datagrams, bundles } = packDatagrams(groups, 'int', 1400);
    expect(datagrams.length).toBeGreaterThan(1);
    expect(bundles).toBe(datagrams.length); // flat: one bundle each
    for (const d of datagrams) {
      expect(d.length).toBeLessThanOrEqual(1400);
      expect(d.subarray(8, 16).toString('hex')).toBe('0000000000000001'); // flat, immediate
    }
    const decoded = datagrams.flatMap((d) => flatten(fromBuffer(d)));
    expect(decoded.map((x) => x.arg)).toEqual(Array.from({ length: 200 }, (_, i) => i)); // complete, in order
    // 16-byte messages, 20 bytes each with their size prefix: (1400 - 16) / 20 = 69 per datagram
    expect(datagrams[0]!.length).toBe(16 + 69 * 20);
  });

  it('nests groups with different timetags inside an immediate bundle, in order', () => {
    const groups = [
      { timetag: timetag(1_000), entries: [m(1), m(2)] },
      { timetag: timetag(2_000), entries: [m(3)] },
    ];
    const { datagrams: [d, ...rest], bundles } = packDatagrams(groups, 'int', 1400);
    expect(bundles).toBe(3); // the immediate one and one per timetag
    expect(rest).toHaveLength(0);
    const p = fromBuffer(d!);
    expect(p.oscType).toBe('bundle');
    if (p.oscType !== 'bundle') return;
    expect(p.timetag).toEqual(IMMEDIATE);
    expect(p.elements.map((e) => (e.oscType === 'bundle' ? e.timetag : null))).toEqual([timetag(1_000), timetag(2_000)]);
    expect(flatten(p).map((x) => x.arg)).toEqual([1, 2, 3]);
  });

  it('sends a message larger than the limit alone', () => {
    const big: OscEntry = { address: '/001', type: 'String', value: 'x'.repeat(2000) };
    const { datagrams } = packDatagrams([{ timetag: IMMEDIATE, entries: [m(1), big, m(2)] }], 'int', 1400);
    expect(datagrams).toHaveLength(3);
    expect(datagrams[1]!.length).toBe(16 + 4 + oscMinEncode(big, 'int').length);
  });

  it('fills a datagram exactly to the limit when the sizes allow it', () => {
    const { datagrams } = packDatagrams([{ timetag: IMMEDIATE, entries: Array.from({ length: 70 }, (_, i) => m(i)) }], 'int', 16 + 70 * 20);
    expect(datagrams).toHaveLength(1);
  });
});
