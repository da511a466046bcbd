// The OSCQuery server (bridge/oscquery/server.ts) against what its clients may send: a command
// that is not JSON or names no address closes the WebSocket with 1007; OSC sent to the read-only
// namespace and commands it does not have are ignored; at most MAX_CLIENTS WebSockets (then 503);
// a value is streamed only from the target that describes its address. Seeded random requests
// never get a 5xx and never stop it answering.
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { hostname } from 'node:os';
import { MAX_CLIENTS, MAX_CLIENTS_PER_PEER, startOscQueryServer, type OscQueryServer } from '../../bridge/oscquery/server.js';
import type { Method } from '../../bridge/oscquery/namespace.js';
import { fuzzSeed, seededRandom } from '../helpers/seeded-random.js';
import { eventually } from '../helpers/gateway.js';

let server: OscQueryServer;
let ws: string;
const METHODS = new Map<string, Method>([
  ['/002', { address: '/002', type: 'f', range: [{ MIN: 0, MAX: 1 }], description: 'Opacity', source: 'show#0' }],
  ['/a/b', { address: '/a/b', type: 's', range: [null], description: 'Text', source: 'show#1' }],
]);

beforeAll(async () => {
  server = await startOscQueryServer({ host: '127.0.0.1', port: 0, name: 'test', description: 'test', hostInfo: { TARGETS: [] } });
  server.setNamespace(METHODS);
  ws = `ws://127.0.0.1:${server.port}`;
});
afterAll(() => server?.close());

async function open(from = '127.0.0.1'): Promise<{ socket: WebSocket; closed: Promise<{ code: number; reason: string }>; got: Buffer[] }> {
  const socket = new WebSocket(ws, { localAddress: from });
  const got: Buffer[] = [];
  socket.on('message', (d: Buffer) => got.push(d));
  const closed = new Promise<{ code: number; reason: string }>((r) => socket.once('close', (code, reason) => r({ code, reason: String(reason) })));
  await new Promise((r, j) => socket.once('open', r).once('error', j));
  return { socket, closed, got };
}

describe('OSCQuery WebSocket commands', () => {
  it('closes with 1007 for a command that is not JSON, or a LISTEN without an address', async () => {
    for (const bad of ['LISTEN /002', JSON.stringify({ COMMAND: 'LISTEN', DATA: 2 }), JSON.stringify({ COMMAND: 'IGNORE' }), '42']) {
      const c = await open();
      c.socket.send(bad);
      expect((await c.closed).code, bad).toBe(1007);
    }
  });

  it('ignores OSC sent to it and commands it does not have, and streams only the describing target\'s values', async () => {
    const c = await open();
    c.socket.send(Buffer.from('/002\0\0\0\0,f\0\0?\0\0\0'), { binary: true });
    c.socket.send(JSON.stringify({ COMMAND: 'PATH_RENAMED', DATA: { OLD: '/a', NEW: '/b' } }));
    c.socket.send(JSON.stringify({ COMMAND: 'LISTEN', DATA: '/002' }));
    await eventually(() => {
      server.played('show#1', [{ address: '/002', args: [{ type: 'float', value: 0.1 }] }]); // another target's /002: not this namespace's
      server.played('show#0', [{ address: '/002', args: [{ type: 'float', value: 0.5 }] }]);
      return c.got.length > 0;
    });
    expect(c.got.every((b) => b.includes(Buffer.from([0x3f, 0, 0, 0])))).toBe(true); // 0.5 as a float32, never 0.1
    expect(c.socket.readyState).toBe(WebSocket.OPEN);
    c.socket.close();
  });

  it(`one address holds at most ${MAX_CLIENTS_PER_PEER} WebSockets (503 past them); another still opens`, async () => {
    const mine = await Promise.all(Array.from({ length: MAX_CLIENTS_PER_PEER }, () => open('127.0.0.1')));
    const status = (from: string) => new Promise<number>((r) => new WebSocket(ws, { localAddress: from }).once('unexpected-response', (_req, res) => r(res.statusCode ?? 0)).once('open', function (this: WebSocket) { this.close(); r(101); }));
    expect(await status('127.0.0.1')).toBe(503);
    expect(await status('127.0.0.99')).toBe(101);
    for (const c of mine) c.socket.close();
    await eventually(() => server.clients === 0);
  });

  it('refuses a Host that is not this bridge\'s (DNS rebinding) and a foreign Origin, on HTTP and the WebSocket alike', async () => {
    const get = (headers: Record<string, string>, path = '/?HOST_INFO') =>
      new Promise<{ status: number; body: string }>((resolve) => {
        const req = request({ host: '127.0.0.1', port: server.port, path, headers }, (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.end();
      });
    const rebound = await get({ host: `attacker.example:${server.port}` });
    expect([rebound.status, JSON.parse(rebound.body).error]).toEqual([403, 'host_not_allowed']);
    const foreign = await get({ host: `127.0.0.1:${server.port}`, origin: 'https://attacker.example' });
    expect([foreign.status, JSON.parse(foreign.body).error]).toEqual([403, 'origin_not_allowed']);
    const allowed: Record<string, string>[] = [{ host: `127.0.0.1:${server.port}` }, { host: `localhost:${server.port}`, origin: 'http://localhost:3000' }, { host: `[::1]:${server.port}` }, { host: `192.168.1.20:${server.port}` }, { host: `${hostname()}.local` }];
    for (const ok of allowed) {
      expect((await get(ok)).status, JSON.stringify(ok)).toBe(200);
    }
    const upgrade = (headers: Record<string, string>) =>
      new Promise<number>((r) => new WebSocket(ws, { headers }).once('unexpected-response', (_req, res) => r(res.statusCode ?? 0)).once('open', function (this: WebSocket) { this.close(); r(101); }));
    expect(await upgrade({ origin: 'https://attacker.example' })).toBe(403);
    expect(await upgrade({ host: 'attacker.example' })).toBe(403);
    expect(await upgrade({ origin: 'http://127.0.0.1:8000' })).toBe(101);
    await eventually(() => server.clients === 0);
  });

  it('takes the Host names and origins it is given besides', async () => {
    const other = await startOscQueryServer({ host: '127.0.0.1', port: 0, name: 'test', description: 'test', hostInfo: { TARGETS: [] }, access: { allowedHosts: ['Bridge.Venue.Example'], allowedOrigins: ['https://show.venue.example'] } });
    try {
      const status = (headers: Record<string, string>) =>
        new Promise<number>((resolve) => request({ host: '127.0.0.1', port: other.port, path: '/', headers }, (res) => (res.resume(), resolve(res.statusCode ?? 0))).end());
      expect(await status({ host: 'bridge.venue.example:5678', origin: 'https://show.venue.example' })).toBe(200);
      expect(await status({ host: 'bridge.venue.example:5678', origin: 'https://other.venue.example' })).toBe(403);
    } finally {
      await other.close();
    }
  });

  it(`refuses a WebSocket beyond ${MAX_CLIENTS} with 503, and takes one again once a client leaves`, async () => {
    // from as many addresses as the slots need, each within its own share
    const clients = await Promise.all(Array.from({ length: MAX_CLIENTS }, (_, i) => open(`127.0.0.${2 + Math.floor(i / MAX_CLIENTS_PER_PEER)}`)));
    const refused = await new Promise<number>((r) => new WebSocket(ws, { localAddress: '127.0.0.200' }).once('unexpected-response', (_req, res) => r(res.statusCode ?? 0)).once('open', () => r(101)));
    expect(refused).toBe(503);
    clients[0]!.socket.close();
    await clients[0]!.closed;
    await eventually(() => server.clients < MAX_CLIENTS);
    const again = await open();
    again.socket.close();
    for (const c of clients.slice(1)) c.socket.close();
  });
});

/** One raw HTTP request: its status (0 if the connection failed). */
function raw(method: string, path: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port: server.port, method, path }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
    req.end();
  });
}

describe('OSCQuery HTTP, fuzzed', () => {
  it('answers seeded random paths, queries and methods with 2xx or 4xx, and keeps answering', async () => {
    const seed = fuzzSeed();
    const rand = seededRandom(seed);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)]!;
    const pieces = ['/', '002', 'a', 'b', '%', '%2F', '%E0%A4', '..', '?', '#', '=', 'VALUE', 'HOST_INFO', 'RANGE', 'CONTENTS', 'TYPE', '%00', '~', '*', '[', ']', '{', '}', ',', '&'];
    try {
      for (let i = 0; i < 400; i++) {
        let path = '/';
        const n = Math.floor(rand() * 8);
        for (let k = 0; k < n; k++) path += pick(pieces);
        const status = await raw(pick(['GET', 'GET', 'GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS']), path);
        expect(status, `${path}`).toBeGreaterThanOrEqual(200);
        expect(status, `${path}`).toBeLessThan(500);
      }
      expect(await raw('GET', '/002?TYPE')).toBe(200);
    } catch (e) {
      throw new Error(`OSCQuery HTTP fuzz failed with FUZZ_SEED=${seed}: ${(e as Error).message}`);
    }
  });
});
