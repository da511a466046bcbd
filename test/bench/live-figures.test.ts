// `npm run bench` reads the live channel's CPU per action back from the live scenario's output for the
// figures and sizing tables. The action table is written and read by one module; when a column was
// added to the table and not to the reader, the whole suite ended without a table ("no per-unit
// figure liveActionCpuUs").
import { describe, expect, it } from 'vitest';
import { ACTION_PATH, actionTable, liveFigures } from '../../bench/live-figures.js';

describe("the live scenario's action table, as npm run bench reads it", () => {
  it('gives back each path\'s µs an action, with or without the kernel\'s part', () => {
    const load = '100 sockets, 8 in flight each, plain controls; median of 3';
    const text = [
      ...actionTable([
        { path: `${ACTION_PATH.bareHttp} (wrk, 100 connections)`, perSecond: 110393.4, cpuShare: 0.951, usPerAction: 8.61 },
        { path: `${ACTION_PATH.bareSocket}: JSON.parse, ack with its ref (${load})`, perSecond: 313923, cpuShare: 0.99, usPerAction: 3.24, systemUsPerAction: 1.12 },
        { path: `${ACTION_PATH.post} (wrk, 100 connections)`, perSecond: 38560, cpuShare: 0.96, usPerAction: 24.79 },
        { path: `${ACTION_PATH.socket} (${load})`, perSecond: 163352, cpuShare: 0.86, usPerAction: 5.31, systemUsPerAction: 1.2 },
      ]),
      '',
      '50000 sockets open on the gateway (0 failed) in 34.7 s; 50000 on bare uWS in 37.4 s',
    ].join('\n');
    const f = liveFigures(text);
    expect([f.bareSocketUs, f.postUs, f.socketUs, f.sockets]).toEqual([3.2, 24.8, 5.3, 50000]);
  });

  it('gives NaN for a path the output lacks, so the suite names the missing figure', () => {
    const f = liveFigures(actionTable([{ path: `${ACTION_PATH.post} (wrk)`, perSecond: 1, cpuShare: 0.5, usPerAction: 20 }]).join('\n'));
    expect(f.postUs).toBe(20);
    expect(f.socketUs).toBeNaN();
  });
});
