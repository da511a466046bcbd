// The live channel's protocol module: every close code has what a client does after it, a 1012's
// reason parses (and anything else is no reason), and no other file writes a close code or an op
// name of its own: the gateway, the client library, the audience page and audience-loadtest import
// them from here.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLOSE, CLOSE_ACTION, retryAfterOf } from '../../schemas/live-protocol.js';

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
