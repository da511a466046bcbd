// The sizing model (bench/sizing.ts) on figures given here: processes follow the socket cap or the
// CPU, whichever binds, plus one spare; memory and cores are with the spare in use; aggregated
// crowds put one summary per fold tick per process into Redis, plain controls one entry per action;
// a load past half of one master or one bridge is split; a result without a per-unit figure is
// refused by name. And docs/operations.md's table is what the newest bench result makes.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { newestResult, type BenchResult } from '../../bench/figures-table.js';
import { SIZING_END, SIZING_START, size, sizingTable, unitFigures, type UnitFigures } from '../../bench/sizing.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const UNITS: UnitFigures = {
  liveActionCpuUs: 10,
  crowdFrameCpuUs: 5,
  bytesPerSocket: 2048,
  gatewayRssMiB: 100,
  tokensCached: 100_000,
  redisEntriesPerSec: 400_000,
  bridgeMessagesPerSec: 60_000,
  summariesPerSecPerProcess: 100,
  actionEntryBytes: 150,
  summaryEntryBytes: 500,
};

describe('sizing', () => {
  it('plans processes by the socket cap when the CPU allows it, plus one spare, and memory and cores with the spare in use', () => {
    // 10 + 4 × 5 = 30 µs a socket a second: 0.7 core holds 23,333 sockets, so the cap (15,000) binds
    const r = size(UNITS, 50_000);
    expect(r.processes).toBe(Math.ceil(50_000 / 15_000) + 1);
    expect(r.socketsPerProcess).toBe(Math.ceil(50_000 / 4));
    expect(r.memoryMiB).toBeCloseTo(100 + (12_500 * 2048) / 2 ** 20, 6);
    expect(r.coresPerProcess).toBeCloseTo((12_500 * 30) / 1e6, 6);
  });

  it('plans processes by the CPU when a socket costs more than the cap allows', () => {
    const r = size({ ...UNITS, liveActionCpuUs: 60 }, 50_000); // 80 µs: 8,750 sockets in 0.7 core
    expect(r.processes).toBe(Math.ceil(50_000 / 8750) + 1);
    expect(r.coresPerProcess).toBeLessThanOrEqual(0.7);
  });

  it('aggregated crowds put one summary a tick per process into Redis; plain controls one entry per action, split past half a master or a bridge', () => {
    const small = size(UNITS, 10_000);
    expect(small.aggregated.entriesPerSec).toBe(small.processes * 100);
    expect(small.plain.entriesPerSec).toBe(10_000);
    expect(small.plain.bridges).toBe(1);
    expect(small.plain.mbps).toBeCloseTo((10_000 * 150 * 8) / 1e6, 6);
    const big = size(UNITS, 1_000_000);
    expect(big.plain.redisShare).toBe(2.5);
    expect(big.plain.bridges).toBe(Math.ceil(1_000_000 / 30_000));
    expect(big.aggregated.bridges).toBe(1);
    const table = sizingTable(UNITS, { file: 'bench/results/x.json', commit: 'abc1234', startedAt: '2026-11-27T00:00:00Z' });
    expect(table).toContain('Cluster, 5 masters, the crowd split over as many layouts (250 % of one master)');
    expect(table).toContain('| 10,000 | 2 | 10,000 |');
    expect(table).toContain('at commit abc1234');
  });

  it('refuses a result without a per-unit figure, by name', () => {
    expect(() => unitFigures({ units: { ...UNITS, bytesPerSocket: undefined } })).toThrow(/bytesPerSocket: run npm run bench/);
    expect(() => unitFigures({})).toThrow(/liveActionCpuUs/);
  });

  it("docs/operations.md's table is what the newest bench result makes", () => {
    const file = newestResult(join(ROOT, 'bench/results'))!;
    const result = JSON.parse(readFileSync(file, 'utf8')) as BenchResult;
    const doc = readFileSync(join(ROOT, 'docs/operations.md'), 'utf8');
    const table = doc.slice(doc.indexOf(SIZING_START), doc.indexOf(SIZING_END) + SIZING_END.length);
    expect(table).toBe(sizingTable(unitFigures(result.raw ?? {}), { file: `bench/results/${file.split('/').pop()}`, ...result }));
  });
});
