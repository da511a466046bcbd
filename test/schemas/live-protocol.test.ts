// The live channel's protocol module: every close code has what a client does after it, a 1012's
// reason parses (and anything else is no reason), and no other file writes a close code or an op
// name of its own: the gateway, the client library, the audience page and audience-loadtest import
// them from here.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ACK_PREFIX, CLOSE, CLOSE_ACTION, CROWD_PREFIX, SERVER_OP, SERVER_OP_AT, retryAfterOf, serverFramePrefix, type ServerOp } from '../../schemas/live-protocol.js';
import { ackFrame, crowdFrame, errorFrame, expiringFrame, lightFrame, refreshedFrame, timeFrame } from '../../gateway/live/frames.js';
import { AppError } from '../../gateway/errors.js';

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const path = join(dir, f);
    if (statSync(path).isDirectory()) return f === 'node_modules' || f === 'dist' ? [] : files(path);
    return /\.(ts|js|mjs)$/.test(f) ? [path] : [];
  });
}

describe('the live protocol module', () => {
  it('says what a client does after every close code', () => {
    expect(Object.keys(CLOSE_ACTION).map(Number).sort()).toEqual(Object.values(CLOSE).map(Number).sort());
  });

  it("gives each server frame's beginning, and the gateway writes every frame so (the load tester reads them without parsing)", () => {
    const frames: [ServerOp, string][] = [
      [SERVER_OP.ack, ackFrame('r-1')], [SERVER_OP.ack, ackFrame('r-"2"', true)],
      [SERVER_OP.crowd, crowdFrame({ lid: 7, address: '/7', mode: 'mean', n: 3, value: [0.5] })],
      [SERVER_OP.error, errorFrame('r-3', new AppError('rate_limited'))],
      [SERVER_OP.expiring, expiringFrame(1)], [SERVER_OP.refreshed, refreshedFrame(1)],
      [SERVER_OP.light, lightFrame('l-1', 1, { zone: 'all', color: '#ff0000' })], [SERVER_OP.time, timeFrame('t-1', 1, 2)],
    ];
    for (const [op, frame] of frames) {
      expect(frame.startsWith(serverFramePrefix(op)), frame).toBe(true);
      expect(frame.slice(SERVER_OP_AT, SERVER_OP_AT + op.length), frame).toBe(op);
      expect((JSON.parse(frame) as { op: string }).op).toBe(op);
    }
    const ack = ackFrame('r-1');
    expect(ack.startsWith(ACK_PREFIX) && ack.slice(ACK_PREFIX.length, ack.indexOf('"', ACK_PREFIX.length))).toBe('r-1');
    const crowd = crowdFrame({ lid: 7, address: '/7', mode: 'mean', n: 3, value: [0.5] });
    expect(crowd.startsWith(CROWD_PREFIX) && Number.parseInt(crowd.slice(CROWD_PREFIX.length), 10)).toBe(7);
  });

  it('reads a 1012 reason, and nothing else as one', () => {
    expect(retryAfterOf('{"retryAfterMs":1234}')).toBe(1234);
    for (const reason of ['', 'the gateway is stopping', '{"retryAfterMs":-1}', '{"retryAfterMs":"soon"}', '{', 'null']) expect(retryAfterOf(reason), reason).toBeNull();
  });

  it('is the only place a close code is written: no bare 4001, 4004, ... in the gateway, the client, the pages or the load tester', () => {
    const bare = /\b(40(0[1-9]|29)|101[12])\b/;
    const found = ['gateway', 'client', 'bench', 'bridge', 'runtime']
      .flatMap(files)
      .flatMap((f) => readFileSync(f, 'utf8').split('\n').map((line, i) => [f, i + 1, line] as const))
      .filter(([, , line]) => bare.test(line))
      .map(([f, n, line]) => `${f}:${n}: ${line.trim()}`);
    expect(found).toEqual([]);
  });
});
