// The hot path's entry text (gateway/actions/entry-text.ts) against the codec every reader uses:
// the same JSON as encodeActionEntry for any control and value, a fresh id each time, and a
// changed control's new fields, never its old ones. Seeded: a failure prints its seed (FUZZ_SEED).
import { describe, expect, it } from 'vitest';
import { newEntryText } from '../../gateway/actions/entry-text.js';
import { decodeActionEntry, encodeActionEntry, ACTION_FIELD } from '../../schemas/action-entry.js';
import { CONTROL_TYPES, type ActionEntry, type ActionValue, type Control } from '../../schemas/types.js';
import { fuzzSeed, seededRandom } from '../helpers/seeded-random.js';

const seed = fuzzSeed();
const V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** Text that needs JSON's escapes: quotes, backslashes, controls, line separators, astral characters. */
function awkwardText(random: () => number, max: number): string {
  const pieces = ['a', 'Z', '"', '\\', '/', '\n', '\t', '\u0001', '\u2028', '\u2029', 'é', '漢', '😀', ' ', '0'];
  return Array.from({ length: Math.floor(random() * max) }, () => pieces[Math.floor(random() * pieces.length)]!).join('');
}

function valueOf(type: Control['type'], random: () => number): ActionValue {
  switch (type) {
    case 'Button':
      return null;
    case 'Slider':
      return random() < 0.2 ? Math.round(random()) : random();
    case 'Toggle':
      return random() < 0.5;
    case 'Index':
      return Math.floor(random() * 40);
    case 'String':
      return awkwardText(random, 30);
    case 'XYPad':
      return [random(), random() < 0.1 ? 1 : random()];
  }
}

describe('newEntryText', () => {
  it(`makes the same JSON as encodeActionEntry, over 20,000 random controls and values (seed ${seed})`, () => {
    const random = seededRandom(seed);
    for (let n = 0; n < 20_000; n++) {
      const type = CONTROL_TYPES[Math.floor(random() * CONTROL_TYPES.length)]!;
      const control: Control = { lid: 1 + Math.floor(random() * 100_000), address: `/${awkwardText(random, 12)}`, type, props: { label: 'x' } };
      const layoutId = `show-${awkwardText(random, 8)}`;
      const value = valueOf(type, random);
      const ts = 1_700_000_000_000 + Math.floor(random() * 1e9);
      const text = newEntryText(layoutId, control, value, ts);
      const id = (JSON.parse(text) as ActionEntry).id;
      expect(id, `seed ${seed}`).toMatch(V4);
      const entry: ActionEntry = { v: 1, id, layoutId, lid: control.lid, address: control.address, type, value, ts };
      expect(text, `seed ${seed}`).toBe(encodeActionEntry(entry));
    }
  });

  it('gives each entry a fresh id, and reads back through the bridge decoder', () => {
    const control: Control = { lid: 7, address: '/007', type: 'XYPad', props: { label: 'pad' } };
    const texts = Array.from({ length: 1000 }, () => newEntryText('show', control, [0.2, 0.9], 1_700_000_000_000));
    expect(new Set(texts.map((t) => (JSON.parse(t) as ActionEntry).id)).size).toBe(1000);
    const decoded = decodeActionEntry([ACTION_FIELD, texts[0]]);
    expect(decoded).toMatchObject({ ok: true, entry: { layoutId: 'show', lid: 7, address: '/007', type: 'XYPad', value: [0.2, 0.9] } });
  });

  it("writes a changed control's fields, not those of the control it replaced", () => {
    const before: Control = { lid: 3, address: '/old', type: 'Slider', props: { label: 's' } };
    const after: Control = { ...before, address: '/new' }; // a layout update brings new control objects
    expect(JSON.parse(newEntryText('show', before, 0.5, 1))).toMatchObject({ address: '/old' });
    expect(JSON.parse(newEntryText('show', after, 0.5, 1))).toMatchObject({ address: '/new' });
  });
});
