// The unit files: systemd-analyze verify passes and each rates 2.5 or better on exposure.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BRIDGE_NODE_FLAGS } from '../../bridge/node-flags.js';
import { GATEWAY_NODE_FLAGS } from '../../gateway/node-flags.js';

const DIR = fileURLToPath(new URL('../../systemd/', import.meta.url));
const UNITS = ['audience-bridge.service', 'audience-gateway.service'];

function analyze(args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile('systemd-analyze', args, { cwd: DIR, timeout: 30_000 }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }));
  });
}

describe.each(UNITS)('%s', (unit) => {
  it('passes systemd-analyze verify', async () => {
    const r = await analyze(['verify', unit]);
    expect(r.out.trim()).toBe('');
    expect(r.code).toBe(0);
  });

  it('rates 2.5 or better in systemd-analyze security', async () => {
    const r = await analyze(['security', '--offline=true', unit]);
    const m = /Overall exposure level for .*: ([\d.]+)/.exec(r.out);
    expect(m, r.out).not.toBeNull();
    expect(Number(m![1])).toBeLessThanOrEqual(2.5);
  });

  it('is Type=notify with a watchdog, restarts forever, checks its config first, and keeps V8 able to JIT', () => {
    const text = readFileSync(`${DIR}${unit}`, 'utf8');
    expect(text).toMatch(/^Type=notify$/m);
    expect(text).toMatch(/^NotifyAccess=all$/m);
    expect(text).toMatch(/^WatchdogSec=\d+$/m);
    expect(text).toMatch(/^Restart=always$/m);
    expect(text).toMatch(/^StartLimitIntervalSec=0$/m);
    expect(text).toMatch(/^ExecStartPre=.*--check-config$/m);
    expect(text).not.toMatch(/^MemoryDenyWriteExecute=yes/m);
  });
});

describe('the bridge unit and its thread placement (bridge/thread-priority.ts)', () => {
  it('lets through, after denying @resources, only the calls that lower and place its own threads, and no real-time policy', () => {
    const text = readFileSync(`${DIR}audience-bridge.service`, 'utf8');
    const filters = [...text.matchAll(/^SystemCallFilter=(.*)$/gm)].map((m) => m[1]!);
    const denied = filters.findIndex((f) => f.startsWith('~') && f.split(' ').includes('@resources'));
    expect(denied).toBeGreaterThanOrEqual(0);
    const allowedAgain = filters.slice(denied + 1).filter((f) => !f.startsWith('~')).flatMap((f) => f.split(' '));
    // chrt (sched_setscheduler or sched_setattr), taskset (sched_setaffinity), os.setPriority (setpriority)
    expect(allowedAgain.sort()).toEqual(['sched_setaffinity', 'sched_setattr', 'sched_setscheduler', 'setpriority']);
    expect(text).toMatch(/^RestrictRealtime=yes$/m);
  });
});

describe('the gateway heap settings', () => {
  const flags = GATEWAY_NODE_FLAGS.join(' ');

  it('are on the unit ExecStart line and in the audience-gateway shebang', () => {
    expect(readFileSync(`${DIR}audience-gateway.service`, 'utf8')).toMatch(new RegExp(`^ExecStart=/usr/bin/node ${flags} /\\S+/dist/gateway/main\\.js$`, 'm'));
    const shebang = readFileSync(fileURLToPath(new URL('../../dist/gateway/main.js', import.meta.url)), 'utf8').split('\n')[0];
    expect(shebang).toBe(`#!/usr/bin/env -S node ${flags}`);
  });

  it('are accepted by this node', async () => {
    const r = await new Promise<{ code: number; out: string }>((resolve) => {
      execFile(process.execPath, [...GATEWAY_NODE_FLAGS, '-e', 'process.stdout.write("ok")'], (err, stdout, stderr) => resolve({ code: err ? 1 : 0, out: stdout + stderr }));
    });
    expect(r).toEqual({ code: 0, out: 'ok' });
  });
});

describe("the bridge's Node flags", () => {
  const flags = BRIDGE_NODE_FLAGS.join(' ');
  /** Runs `script` in a Node started with `nodeFlags`, and reads the number it prints. */
  const numberPrintedBy = (nodeFlags: readonly string[], script: string) =>
    new Promise<number>((resolve, reject) => execFile(process.execPath, [...nodeFlags, '-e', script], (err, stdout, stderr) => (err ? reject(new Error(stderr)) : resolve(Number(stdout)))));

  it('is on the unit ExecStart line and in the audience-bridge shebang', () => {
    expect(readFileSync(`${DIR}audience-bridge.service`, 'utf8')).toMatch(new RegExp(`^ExecStart=/usr/bin/node ${flags} /\\S+/dist/bridge/main\\.js --config \\S+$`, 'm'));
    const shebang = readFileSync(fileURLToPath(new URL('../../dist/bridge/main.js', import.meta.url)), 'utf8').split('\n')[0];
    expect(shebang).toBe(`#!/usr/bin/env -S node ${flags}`);
  });

  it('spares a heap growing as in a drain the full collections V8 alone runs', async () => {
    // A drain in short: every turn makes garbage and keeps a little, which the young generation
    // promotes, until about 45 MB are kept. V8 alone runs two full collections on the way (Node 20
    // and 22). With the flag Node 20 runs none; Node 22's V8 still runs one early (at about 10 MB,
    // "GC in old space requested", with or without it), and none as the heap grows.
    const script = `const { PerformanceObserver, constants } = require('node:perf_hooks');
let majors = 0;
new PerformanceObserver((l) => { for (const e of l.getEntries()) if (e.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors++; }).observe({ entryTypes: ['gc'] });
const keep = [];
let turn = 0;
const step = () => {
  for (let j = 0; j < 10000; j++) { const o = { a: j, b: 'x' + j }; if (j < 1000) keep.push(o); }
  if (++turn < 800) setImmediate(step); else setTimeout(() => process.stdout.write(String(majors)), 50);
};
setTimeout(step, 300);`;
    const withFlag = await numberPrintedBy(BRIDGE_NODE_FLAGS, script);
    const without = await numberPrintedBy([], script);
    expect(without).toBeGreaterThanOrEqual(2);
    expect(withFlag).toBeLessThanOrEqual(1);
  });

  it('collects garbage on the main thread alone, so a collection never waits for a helper thread', async () => {
    // Young objects made fast, a third kept for a while: V8 alone gives its helper threads part of
    // every scavenge (about 120 ms of their CPU time here), and the main thread waits at the end of
    // each for the helpers to finish. The bridge's helpers may be starved on a busy CPU (a 42 ms
    // scavenge in bench -- bridge), so its flags keep all of it on the main thread. CPU time from
    // /proc in clock ticks (10 ms); the helpers may still compile a little.
    const script = `const fs = require('node:fs');
const keep = [];
let sink = 0;
for (let i = 0; i < 3e6; i++) {
  const o = { a: i, b: 'x' + i, c: [i, i + 1] };
  if (i % 3 === 0) keep.push(o);
  if (keep.length > 200000) keep.splice(0, 100000);
  sink += o.c.length;
}
const ticks = (tid) => { const f = fs.readFileSync('/proc/self/task/' + tid + '/stat', 'utf8').split(') ')[1].split(' '); return Number(f[11]) + Number(f[12]); };
let helpers = 0;
for (const t of fs.readdirSync('/proc/self/task')) if (Number(t) !== process.pid) helpers += ticks(t);
process.stdout.write(String(sink > 0 ? helpers : -1));`;
    const withFlags = await numberPrintedBy(BRIDGE_NODE_FLAGS, script);
    const heapFloorOnly = await numberPrintedBy(BRIDGE_NODE_FLAGS.filter((f) => f.startsWith('--initial-heap-size')), script);
    expect(heapFloorOnly).toBeGreaterThanOrEqual(5);
    expect(withFlags).toBeLessThanOrEqual(2);
  });
});

describe('scripts/install-units.sh', () => {
  it('writes both units running the Node the project was installed with (or NODE=...), and they still verify', async () => {
    const target = mkdtempSync(join(tmpdir(), 'ac-units-'));
    const node = join(target, 'node-of-this-install'); // another path for the same Node: the units must name it
    symlinkSync(process.execPath, node);
    const script = fileURLToPath(new URL('../../scripts/install-units.sh', import.meta.url));
    const out = await new Promise<string>((resolve, reject) =>
      execFile('bash', [script, target], { env: { ...process.env, NODE: node } }, (err, stdout, stderr) => (err ? reject(new Error(stderr)) : resolve(stdout))),
    );
    expect(out).toContain(`runs ${node}`);
    for (const unit of UNITS) {
      const text = readFileSync(join(target, unit), 'utf8');
      const exec = text.split('\n').filter((l) => /^ExecStart(Pre)?=/.test(l));
      expect(exec.length).toBeGreaterThan(0);
      for (const line of exec) expect(line).toMatch(new RegExp(`^ExecStart(Pre)?=${node.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} `));
      expect(text).not.toContain('/usr/bin/node');
      const verify = await analyze(['verify', join(target, unit)]);
      expect([unit, verify.out.trim(), verify.code]).toEqual([unit, '', 0]);
    }
  });
});

