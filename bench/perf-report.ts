// A process's CPU by symbol, native code and the kernel included: `perf record -e cpu-clock` (a
// software clock: this VM has no hardware counters) samples it, and `perf report` tells each
// symbol's share of the samples. A Node process started with --perf-basic-prof names its JIT'd
// JavaScript (perf reads /tmp/perf-<pid>.map); without it those samples show as bare addresses.
import { spawn, execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** One symbol's share of a recording's samples. */
export interface SymbolShare {
  /** the shared object, with the thread id dropped from JIT code's ("[JIT]") */
  dso: string;
  symbol: string;
  /** percent of all samples */
  percent: number;
}

/** Where a sample ran, as the figures group it. */
export type Part = 'kernel' | 'JavaScript (JIT code)' | 'V8 and Node (runtime, builtins, GC)' | 'libc' | 'uWebSockets.js' | 'other';

export const PARTS: readonly Part[] = ['kernel', 'JavaScript (JIT code)', 'V8 and Node (runtime, builtins, GC)', 'libc', 'uWebSockets.js', 'other'];

export function partOf(dso: string): Part {
  if (dso === '[kernel.kallsyms]') return 'kernel';
  if (dso === '[JIT]') return 'JavaScript (JIT code)';
  if (dso === 'node') return 'V8 and Node (runtime, builtins, GC)';
  if (dso.startsWith('libc.so')) return 'libc';
  if (dso.startsWith('uws_')) return 'uWebSockets.js';
  return 'other';
}

/**
 * Records `pid` for `seconds` at `hz` samples a second into `file`; resolves when perf has written
 * it. perf stops itself (it records while its `sleep` runs).
 */
export function perfRecord(pid: number, file: string, seconds: number, hz = 2999): Promise<void> {
  return new Promise((resolve, reject) => {
    const perf = spawn('perf', ['record', '-q', '-e', 'cpu-clock', '-F', String(hz), '-p', String(pid), '-o', file, '--', 'sleep', String(seconds)], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    perf.stderr.on('data', (d) => (err += String(d)));
    perf.once('error', reject);
    perf.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`perf record exited with ${code}: ${err.trim()}`))));
  });
}

/** `perf report`'s self shares by shared object and symbol, largest first. */
export async function perfShares(file: string): Promise<SymbolShare[]> {
  const { stdout } = await run('perf', ['report', '-i', file, '--no-children', '-g', 'none', '--sort', 'dso,sym', '--stdio', '--percent-limit', '0'], { maxBuffer: 64 << 20 });
  return parseReport(stdout);
}

/** Parses `perf report --stdio --sort dso,sym` lines: "  12.34%  node  [.] v8::internal::…". */
export function parseReport(text: string): SymbolShare[] {
  const rows: SymbolShare[] = [];
  for (const line of text.split('\n')) {
    const m = /^\s*([\d.]+)%\s+(.+?)\s+\[[.k]\]\s+(.*)$/.exec(line);
    if (!m) continue;
    rows.push({ percent: Number(m[1]), dso: m[2]!.startsWith('[JIT]') ? '[JIT]' : m[2]!, symbol: m[3]!.trim() });
  }
  return rows;
}

/** Removes the map a process started with --perf-basic-prof wrote (once its recordings are reported). */
export function removePerfMap(pid: number): void {
  rmSync(`/tmp/perf-${pid}.map`, { force: true });
}
