// The live channel's client frames as the gateway checks them (live-frames.schema.json): the
// frame's `op` picks the one schema it is checked against, and an error names the field at fault.
import { describe, expect, it } from 'vitest';
import { WHOLE_DOCUMENT, describeFirstError, validateLiveClientFrame } from '../../schemas/validators.js';

function check(frame: unknown): string {
  return validateLiveClientFrame(frame, WHOLE_DOCUMENT) ? 'valid' : describeFirstError(validateLiveClientFrame.errors, 'frame');
}

describe('a live client frame', () => {
  it('is an action or a refresh, each checked against its own schema', () => {
    expect(check({ op: 'action', ref: 'r', lid: 1, type: 'Button' })).toBe('valid');
    expect(check({ op: 'action', ref: 'r', layoutId: 'main-stage', lid: 2, type: 'Slider', value: 0.5, idempotencyKey: 'k-1' })).toBe('valid');
    expect(check({ op: 'refresh', token: 'a.b.c' })).toBe('valid');
    expect(check({ op: 'action', ref: 'r', lid: 1, type: 'Button', token: 'a.b.c' })).toBe('frame has an unknown field "token"');
    expect(check({ op: 'refresh', token: 'a.b.c', ref: 'r' })).toBe('frame has an unknown field "ref"');
    expect(check({ op: 'refresh' })).toBe('frame is missing the field "token"');
    expect(check({ op: 'action', ref: 'r', type: 'Button' })).toBe('frame is missing the field "lid"');
  });

  it('with an op that is neither, or none, says so, not that another field is missing', () => {
    expect(check({ op: 'dance', ref: 'r' })).toBe('frame.op has an unknown value "dance"');
    expect(check({ op: 7, ref: 'r' })).toBe('frame.op must be a string');
    expect(check({ ref: 'r', lid: 1, type: 'Button' })).toBe('frame is missing the field "op"');
    expect(check(['action'])).toBe('frame must be object');
    expect(check(null)).toBe('frame must be object');
  });
});
