// the live-perf lab tool's sampler against a real process: perf records a Node process that spends its
// time in one named JavaScript function, and the report names that function as JIT code.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { partOf, perfRecord, perfShares, removePerfMap } from '../../bench/perf-report.js';

const BURNER = `
function burnForThePerfTest(n) { let x = 0; for (let i = 0; i < n; i++) x += Math.sqrt(i) % 7; return x; }
const end = Date.now() + 20000;
let s = 0;
while (Date.now() < end) s += burnForThePerfTest(100000);
process.stdout.write(String(s));
`;

describe('perf-report', () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });

  it('names the JavaScript function a process spends its time in, as JIT code, and the shares add up to the whole', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'perf-report-'));
    const child = spawn(process.execPath, ['--perf-basic-prof', '-e', BURNER], { stdio: 'ignore' });
    cleanups.push(() => {
      child.kill('SIGKILL');
      removePerfMap(child.pid!);
      rmSync(dir, { recursive: true, force: true });
    });
    await sleep(1000); // past the interpreter: the function is compiled and in the map
    const file = join(dir, 'burner.data');
    await perfRecord(child.pid!, file, 1, 999);
    const rows = await perfShares(file);
    const top = rows[0]!;
    expect(top.symbol).toContain('burnForThePerfTest');
    expect(top.dso).toBe('[JIT]');
    expect(partOf(top.dso)).toBe('JavaScript (JIT code)');
    expect(top.percent).toBeGreaterThan(50);
    const total = rows.reduce((sum, r) => sum + r.percent, 0);
    expect(total).toBeGreaterThan(99);
    expect(total).toBeLessThan(100.5);
  });

  it('says why when perf cannot record the process', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'perf-report-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const gone = spawn(process.execPath, ['-e', '']);
    await new Promise((r) => gone.once('exit', r));
    await expect(perfRecord(gone.pid!, join(dir, 'none.data'), 1)).rejects.toThrow(/perf record exited with/);
  });

  it('groups samples by where they ran', () => {
    expect(partOf('[kernel.kallsyms]')).toBe('kernel');
    expect(partOf('node')).toBe('V8 and Node (runtime, builtins, GC)');
    expect(partOf('libc.so.6')).toBe('libc');
    expect(partOf('uws_linux_x64_115.node')).toBe('uWebSockets.js');
    expect(partOf('[vdso]')).toBe('other');
  });
});
