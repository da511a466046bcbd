// the live scenario's action load speaks WebSocket at the byte level (bench/live-action-load.ts): it must
// be a client a real server accepts, and it must count every answer it reads, whether a frame
// comes whole, split over two reads, or behind a page frame too long for a 7- or 16-bit length.
import { once } from 'node:events';
import { type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { socketActions } from '../../bench/live-action-load.js';
import { LIVE_SUBPROTOCOL } from '../../schemas/live-protocol.js';

let server: WebSocketServer | null = null;
afterEach(async () => {
  for (const c of server?.clients ?? []) c.terminate();
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  server = null;
});

describe("the live scenario's byte-level action load", () => {
  it('is accepted by a WebSocket server, counts every ack it reads, behind a 70 KB page, and measures the kernel part of the server CPU', async () => {
    const page = JSON.stringify({ op: 'page', controls: 'x'.repeat(70_000) });
    let received = 0;
    let invalid = 0;
    server = new WebSocketServer({ host: '127.0.0.1', port: 0, path: '/live', handleProtocols: (offered) => (offered.has(LIVE_SUBPROTOCOL) ? LIVE_SUBPROTOCOL : false) });
    server.on('connection', (ws) => {
      ws.send(page);
      ws.on('message', (data: Buffer) => {
        const frame = JSON.parse(data.toString()) as { op?: string; ref?: string; lid?: number };
        if (frame.op !== 'action' || frame.lid !== 7) invalid++;
        received++;
        // every third answer an error: answered, so the load goes on, but not counted as acked
        const answer = received % 3 === 0 ? `{"op":"error","ref":"${frame.ref}"}` : `{"op":"ack","ref":"${frame.ref}"}`;
        ws.send(answer);
      });
    });
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    const connections = 4;
    const inFlight = 8;
    const load = await socketActions({ url: `http://127.0.0.1:${port}`, pid: process.pid, tokens: ['t'], bodies: [{ lid: 7, type: 'Button' }], connections, seconds: 1, inFlight, rate: 0 });
    const { acked } = load;
    expect(invalid).toBe(0);
    expect(acked).toBeGreaterThan(100);
    // two of every three answers are acks; at most the frames in flight at the end go unread
    expect(acked).toBeLessThanOrEqual(Math.ceil((received * 2) / 3));
    expect(acked).toBeGreaterThanOrEqual(received - connections * inFlight - Math.ceil(received / 3));
    // the server's CPU, and of it the kernel's part: some 0.5 s of socket reads and writes here (/proc
    // counts CPU in 10 ms ticks, so a load much lighter than this may show none in the kernel)
    expect(load.systemUsPerAction).toBeGreaterThan(0);
    expect(load.systemUsPerAction).toBeLessThan(load.usPerAction);
  });

  it('at a rate, sends about that many frames a second in writes of perWrite frames each, and measures the server CPU it caused', async () => {
    const reads: number[] = [];
    server = new WebSocketServer({ host: '127.0.0.1', port: 0, path: '/live', handleProtocols: (offered) => (offered.has(LIVE_SUBPROTOCOL) ? LIVE_SUBPROTOCOL : false) });
    server.on('connection', (ws, req) => {
      ws.send('{"op":"page"}');
      // the frames of each TCP read (a write of the load arrives whole on loopback at these sizes)
      let inRead = 0;
      req.socket.prependListener('data', () => {
        if (inRead > 0) reads.push(inRead);
        inRead = 0;
        setImmediate(() => {
          if (inRead > 0) reads.push(inRead);
          inRead = 0;
        });
      });
      ws.on('message', (data: Buffer) => {
        inRead++;
        ws.send(`{"op":"ack","ref":"${(JSON.parse(data.toString()) as { ref: string }).ref}"}`);
      });
    });
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    const rate = 2000;
    const perWrite = 8;
    const load = await socketActions({ url: `http://127.0.0.1:${port}`, pid: process.pid, tokens: ['t'], bodies: [{ lid: 7, type: 'Button' }], connections: 4, seconds: 1, inFlight: 0, rate, perWrite });
    const frames = reads.reduce((a, b) => a + b, 0);
    expect(frames).toBeGreaterThanOrEqual(rate * 0.8);
    expect(frames).toBeLessThanOrEqual(rate * 1.1);
    expect(frames % perWrite).toBe(0);
    // most reads hold one write of the load, whole (a busy loop may read two at once)
    expect(reads.filter((n) => n === perWrite).length).toBeGreaterThan(reads.length * 0.8);
    // every frame answered is counted; the last writes' answers may come after the load stops counting
    expect(load.acked).toBeLessThanOrEqual(frames);
    expect(load.acked).toBeGreaterThanOrEqual(frames - 4 * perWrite);
    // its CPU: 2,000 frames cost the kernel 10 to 50 ms here, a tick or a few, and now and then none
    expect(load.usPerAction).toBeGreaterThan(0);
    expect(load.systemUsPerAction).toBeLessThanOrEqual(load.usPerAction);
  });
});
