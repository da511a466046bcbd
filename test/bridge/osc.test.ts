// The OSC mapping, byte for byte, and the datagram packer.
import { fromBuffer, type OscPacketOutput } from 'osc-min';
import { describe, expect, it } from 'vitest';
import { IMMEDIATE, bundle, encodeMessage, packDatagrams, timetag, toOscMessage } from '../../bridge/osc.js';
import type { ActionEntry } from '../../schemas/types.js';

const hex = (b: Buffer) => b.toString('hex');
const msg = (type: ActionEntry['type'], value: ActionEntry['value'], booleans: 'int' | 'TF' = 'int') => hex(encodeMessage(toOscMessage({ address: '/001', type, value }, booleans)));

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
});

describe('timetags and bundles', () => {
  it('converts Unix ms to NTP seconds and 2^-32 fractions', () => {
    expect(timetag(1_700_000_000_500)).toEqual([1_700_000_000 + 2_208_988_800, 2 ** 31]);
    expect(timetag(0)).toEqual([2_208_988_800, 0]);
    expect(timetag(null)).toEqual(IMMEDIATE);
  });

  it('encodes a bundle as #bundle, timetag, size-prefixed elements', () => {
    const m = encodeMessage(toOscMessage({ address: '/001', type: 'Button', value: null }, 'int'));
    expect(hex(bundle([1, 2], [m]))).toBe('2362756e646c6500' + '00000001' + '00000002' + '00000010' + hex(m));
  });
});

function flatten(p: OscPacketOutput, tag: [number, number] | null = null): { address: string; tag: [number, number] | null; arg: unknown }[] {
  if (p.oscType === 'message') return [{ address: p.address, tag, arg: (p.args[0] as { value?: unknown } | undefined)?.value }];
  return p.elements.flatMap((e) => flatten(e, p.timetag[0] === 0 && p.timetag[1] === 1 && e.oscType === 'bundle' ? null : p.timetag));
}

describe('packing datagrams', () => {
  const m = (i: number) => encodeMessage(toOscMessage({ address: `/${String(i).padStart(3, '0')}`, type: 'Index', value: i }, 'int'));

  it('keeps one timetag per datagram flat, and every datagram within the limit', () => {
    const groups = [{ timetag: IMMEDIATE, messages: Array.from({ length: 200 }, (_, i) => m(i)) }];
    const { datagrams, bundles } = packDatagrams(groups, 1400);
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
      { timetag: timetag(1_000), messages: [m(1), m(2)] },
      { timetag: timetag(2_000), messages: [m(3)] },
    ];
    const { datagrams: [d, ...rest], bundles } = packDatagrams(groups, 1400);
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
    const big = encodeMessage(toOscMessage({ address: '/001', type: 'String', value: 'x'.repeat(2000) }, 'int'));
    const { datagrams } = packDatagrams([{ timetag: IMMEDIATE, messages: [m(1), big, m(2)] }], 1400);
    expect(datagrams).toHaveLength(3);
    expect(datagrams[1]!.length).toBe(16 + 4 + big.length);
  });

  it('fills a datagram exactly to the limit when the sizes allow it', () => {
    const { datagrams } = packDatagrams([{ timetag: IMMEDIATE, messages: Array.from({ length: 70 }, (_, i) => m(i)) }], 16 + 70 * 20);
    expect(datagrams).toHaveLength(1);
  });
});
