// The suite's two entry points name what they run: `npm run bench -- <scenario>` refuses a name it
// does not know (exit 2) and lists the scenarios, and `npm run bench:lab` lists its tools and
// refuses an unknown one. Neither starts anything for a name it does not know.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const RUN = fileURLToPath(new URL('../../dist/bench/run.js', import.meta.url));
const LAB = fileURLToPath(new URL('../../dist/bench/lab.js', import.meta.url));
const node = (file: string, ...args: string[]) => spawnSync(process.execPath, [file, ...args], { encoding: 'utf8', timeout: 20_000 });

describe('npm run bench -- <scenario>', () => {
  it('refuses an unknown scenario with exit 2 and lists every scenario of a whole run', () => {
    const r = node(RUN, 'no-such-scenario');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('no scenario "no-such-scenario"');
    for (const name of ['http', 'bridge', 'crowd', 'scale', 'live', 'rehearsal']) expect(r.stderr).toMatch(new RegExp(`^  ${name} `, 'm'));
  });
});

describe('npm run bench:lab', () => {
  it('lists its tools without running one, and refuses an unknown tool with exit 2', () => {
    const list = node(LAB);
    expect(list.status).toBe(0);
    for (const name of ['profile', 'live-perf']) expect(list.stderr).toMatch(new RegExp(`^  ${name} `, 'm'));
    const unknown = node(LAB, 'no-such-tool');
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain('no tool "no-such-tool"');
  });
});
