// The bench's open-loop generator really spreads requests over time (autocannon's rate option
// sends each second's budget as a burst), frames replies by Content-Length on keep-alive
// sockets, and counts non-2xx answers. Against a real node:http server.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openLoop } from '../../bench/open-loop.js';

let server: Server;
let url = '';
const arrivals: number[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    arrivals.push(performance.now());
    req.resume();
    req.on('end', () => {
      res.statusCode = req.url === '/fail' ? 500 : 200;
      res.end('{"success":true}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('openLoop', () => {
  it('sends rate x duration requests spread evenly, and counts the non-2xx answers', async () => {
    const started = performance.now();
    const r = await openLoop({
      name: 't',
      url,
      rate: 400,
      durationSec: 1,
      connections: 10,
      requests: [
        { method: 'POST', path: '/ok', headers: { 'content-type': 'application/json' }, body: '{"a":1}' },
        { method: 'GET', path: '/fail', headers: {} },
      ],
    });
    expect(r.total).toBe(400);
    expect(r.errors).toBe(0);
    expect(r.non2xx).toBe(200);
    // Evenly paced: about half arrive in the first half second (a burst would bring them all at once).
    const firstHalf = arrivals.filter((t) => t - started < 500).length;
    expect(firstHalf).toBeGreaterThan(400 * 0.3);
    expect(firstHalf).toBeLessThan(400 * 0.7);
    expect(r.latencyMs.p50).toBeLessThanOrEqual(r.latencyMs.p99);
    expect(r.latencyMs.p99).toBeLessThanOrEqual(r.latencyMs.max);
    expect(r.fromScheduleMs!.max).toBeGreaterThanOrEqual(r.latencyMs.max);
  });

  it('hands back each request’s latency at its index when asked, the same ones it reports', async () => {
    const latencyAt = new Float64Array(100).fill(NaN);
    const r = await openLoop({ name: 't', url, rate: 200, durationSec: 0.5, connections: 2, requests: [{ method: 'GET', path: '/slow-or-not', headers: {} }], latencyAt });
    expect(r.total).toBe(100);
    expect(latencyAt.every((ms) => ms > 0)).toBe(true);
    const sorted = [...latencyAt].sort((a, b) => a - b);
    expect([sorted[50], sorted[99], sorted[sorted.length - 1]]).toEqual([r.latencyMs.p50, r.latencyMs.p99, r.latencyMs.max]);
  });
});
