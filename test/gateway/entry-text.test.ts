// The hot path's entries (gateway/actions/entry-batch.ts, entry-text.ts) against the codec every
// reader uses: the same JSON as encodeActionEntry for any control and value, each a RESP bulk string
// of its exact UTF-8 length, a fresh id each time, and a changed control's new fields, never its old ones. Seeded: a failure prints its seed (FUZZ_SEED).
import { describe, expect, it } from 'vitest';
import { EntryBatch } from '../../gateway/actions/entry-batch.js';
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

/** `$<bytes>\r\n<text>\r\n`: the RESP bulk string of a text. */
const bulk = (text: string) => Buffer.from(`$${Buffer.byteLength(text)}\r\n${text}\r\n`, 'utf8');

/** One action's entry text, as a batch writes it. */
function entryText(layoutId: string, control: Control, value: ActionValue, ts: number): string {
  const batch = new EntryBatch();
  batch.addAction(layoutId, control, value, ts);
  return batch.text(0);
}

describe('EntryBatch', () => {
  it(`writes the same JSON as encodeActionEntry, each entry a RESP bulk string of its UTF-8 length, over 20,000 random controls and values (seed ${seed})`, () => {
    const random = seededRandom(seed);
    const batch = new EntryBatch();
    const texts: string[] = [];
    for (let n = 0; n < 20_000; n++) {
      if (random() < 0.05) {
        const summary = JSON.stringify({ crowd: awkwardText(random, 40) }); // a crowd summary: text given whole
        batch.addText(summary);
        texts.push(summary);
        continue;
      }
      const type = CONTROL_TYPES[Math.floor(random() * CONTROL_TYPES.length)]!;
      const control: Control = { lid: 1 + Math.floor(random() * 100_000), address: `/${awkwardText(random, 12)}`, type, props: { label: 'x' } };
      const layoutId = `show-${awkwardText(random, 8)}`;
      const value = valueOf(type, random);
      const ts = 1_700_000_000_000 + Math.floor(random() * 1e9);
      batch.addAction(layoutId, control, value, ts);
      const text = batch.text(batch.count - 1);
      const id = (JSON.parse(text) as ActionEntry).id;
      expect(id, `seed ${seed}`).toMatch(V4);
      const entry: ActionEntry = { v: 1, id, layoutId, lid: control.lid, address: control.address, type, value, ts };
      expect(text, `seed ${seed}`).toBe(encodeActionEntry(entry));
      texts.push(text);
    }
    expect(batch.count).toBe(texts.length);
    expect(batch.bytes().equals(Buffer.concat(texts.map(bulk))), `seed ${seed}`).toBe(true);
    expect(batch.bytes(100, 356).equals(Buffer.concat(texts.slice(100, 356).map(bulk))), `seed ${seed}`).toBe(true);
    const keep = texts.map(() => random() < 0.7);
    const kept = batch.kept(keep);
    const keptTexts = texts.filter((_, i) => keep[i]);
    expect(kept.count).toBe(keptTexts.length);
    expect(kept.bytes().equals(Buffer.concat(keptTexts.map(bulk))), `seed ${seed}`).toBe(true);
    expect(kept.text(kept.count - 1)).toBe(keptTexts.at(-1));
  });

  it('gives each entry a fresh id, and reads back through the bridge decoder', () => {
    const control: Control = { lid: 7, address: '/007', type: 'XYPad', props: { label: 'pad' } };
    const texts = Array.from({ length: 1000 }, () => entryText('show', control, [0.2, 0.9], 1_700_000_000_000));
    expect(new Set(texts.map((t) => (JSON.parse(t) as ActionEntry).id)).size).toBe(1000);
    const decoded = decodeActionEntry([ACTION_FIELD, texts[0]]);
    expect(decoded).toMatchObject({ ok: true, entry: { layoutId: 'show', lid: 7, address: '/007', type: 'XYPad', value: [0.2, 0.9] } });
  });

  it("writes a changed control's fields, not those of the control it replaced", () => {
    const before: Control = { lid: 3, address: '/old', type: 'Slider', props: { label: 's' } };
    const after: Control = { ...before, address: '/new' }; // a layout update brings new control objects
    expect(JSON.parse(entryText('show', before, 0.5, 1))).toMatchObject({ address: '/old' });
    expect(JSON.parse(entryText('show', after, 0.5, 1))).toMatchObject({ address: '/new' });
  });
});
