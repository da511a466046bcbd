// The stream-entry contract between gateway and bridge: encode/decode and what decoding refuses.
import { describe, expect, it } from 'vitest';
import { ACTION_FIELD, decodeActionEntry, decodeStreamEntry, encodeActionEntry, encodeCrowdSummary } from '../../schemas/action-entry.js';
import type { CrowdSummary } from '../../schemas/aggregate.js';
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

describe('crowd summary codec: sparse bins', () => {
  const summary = (votes: number[]): CrowdSummary => ({ v: 2, kind: 'summary', id: 's-1', layoutId: 'show', lid: 4, address: '/004', type: 'Index', mode: 'votes', windowMs: 1000, source: 'gw-1', seq: 1, ts: 1_700_000_000_000, n: votes.reduce((a, b) => a + b, 0), votes });

  it('writes mostly-empty bins sparse and reads them back dense', () => {
    const votes = new Array<number>(1000).fill(0);
    votes[3] = 2;
    votes[999] = 1;
    const text = encodeCrowdSummary(summary(votes));
    expect(JSON.parse(text).votes).toEqual({ len: 1000, at: [3, 999], v: [2, 1] });
    const back = decodeStreamEntry([ACTION_FIELD, text]);
    expect(back.ok && 'summary' in back && back.summary.votes).toEqual(votes);
  });

  it('refuses a sparse form that points outside its length (dead-lettered with its reason, never a crash)', () => {
    const text = JSON.stringify({ ...summary([1, 0, 0]), votes: { len: 3, at: [7], v: [1] } });
    expect(decodeStreamEntry([ACTION_FIELD, text])).toEqual({ ok: false, reason: 'summary votes points at a bin outside its length' });
  });
});
