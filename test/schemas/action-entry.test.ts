// The stream-entry contract between gateway and bridge: encode/decode and what decoding refuses.
import { describe, expect, it } from 'vitest';
import { ACTION_FIELD, decodeActionEntry, encodeActionEntry } from '../../schemas/action-entry.js';
import { actionStreamKey, deadLetterKey, presenceKey } from '../../schemas/redis-keys.js';
import type { ActionEntry } from '../../schemas/types.js';

const entry: ActionEntry = { v: 1, id: 'a1', layoutId: 'show', lid: 6, address: '/006', type: 'XYPad', value: [0.25, 1], ts: 1_700_000_000_000 };

describe('action entry codec', () => {
  it('round-trips every control type', () => {
    const values: [ActionEntry['type'], ActionEntry['value']][] = [['Button', null], ['Slider', 0.5], ['Toggle', false], ['Index', 3], ['String', 'hi'], ['XYPad', [0, 1]]];
    for (const [type, value] of values) {
      const e = { ...entry, type, value };
      expect(decodeActionEntry([ACTION_FIELD, encodeActionEntry(e)])).toEqual({ ok: true, entry: e });
    }
  });

  it.each([
    ['no action field', ['other', '{}'], /no "action" field/],
    ['not JSON', [ACTION_FIELD, '{nope'], /not JSON/],
    ['a missing field', [ACTION_FIELD, JSON.stringify({ ...entry, ts: undefined })], /ts/],
    ['a value of the wrong shape', [ACTION_FIELD, JSON.stringify({ ...entry, value: 0.5 })], /value/],
    ['a Slider out of range', [ACTION_FIELD, JSON.stringify({ ...entry, type: 'Slider', value: 2 })], /value/],
    ['a Button with a value', [ACTION_FIELD, JSON.stringify({ ...entry, type: 'Button', value: 1 })], /value/],
    ['an unknown version', [ACTION_FIELD, JSON.stringify({ ...entry, v: 2 })], /v/],
    ['an unknown control type', [ACTION_FIELD, JSON.stringify({ ...entry, type: 'Knob', value: 0.5 })], /type/],
    ['no control type', [ACTION_FIELD, JSON.stringify({ ...entry, type: undefined })], /type/],
    ['an extra field', [ACTION_FIELD, JSON.stringify({ ...entry, extra: 1 })], /extra/],
  ])('refuses %s with a reason', (_what, fields, reason) => {
    const r = decodeActionEntry(fields);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(reason);
  });
});

describe('shared key names', () => {
  it('tag every key of a layout with {layoutId} for Redis Cluster', () => {
    for (const k of [actionStreamKey('ac:', 'show'), presenceKey('ac:', 'show'), deadLetterKey('ac:', 'show')]) {
      expect(k.startsWith('ac:')).toBe(true);
      expect(k).toContain('{show}');
    }
  });
});
