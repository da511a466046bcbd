// The tests' fault-injecting TCP proxy, against a real TCP echo server: latency and jitter per
// direction with the order kept, the bandwidth cap, a stall, a cut (RST, and connections refused
// until restored), a vanish (nothing passes and nothing closes; a link whose far end closed
// meanwhile is reset on return), and failover to the next target that listens.
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { eventually } from '../helpers/gateway.js';

let echo: Server;
let echoPort = 0;
const serverSide: Socket[] = [];
beforeAll(async () => {
  echo = createServer((s) => {
    serverSide.push(s);
    s.on('error', () => {});
    s.pipe(s);
  });
  await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
  echoPort = (echo.address() as { port: number }).port;
});
afterAll(async () => {
  for (const s of serverSide) s.destroy();
  await new Promise((r) => echo.close(r));
});

async function connect(port: number): Promise<{ s: Socket; got: Buffer[]; events: string[] }> {
  const s = createConnection({ host: '127.0.0.1', port });
  const got: Buffer[] = [];
  const events: string[] = [];
  s.on('data', (d: Buffer) => got.push(d));
  s.on('end', () => events.push('end'));
  s.on('error', (e: NodeJS.ErrnoException) => events.push(e.code ?? 'error'));
  s.on('close', () => events.push('close'));
  await new Promise<void>((resolve, reject) => {
    s.once('connect', () => resolve());
    s.once('error', reject);
  });
  return { s, got, events };
}
const bytes = (got: Buffer[]) => got.reduce((n, b) => n + b.length, 0);

describe('the fault proxy', () => {
  it('adds latency each way, keeps the order under jitter, and caps the bandwidth', async () => {
    const p = new FaultProxy({ targets: () => [echoPort], up: { latencyMs: 100, jitterMs: 50 }, down: { latencyMs: 100, jitterMs: 50 } });
    await p.start();
    const c = await connect(p.port);
    const started = Date.now();
    for (let i = 0; i < 50; i++) c.s.write(`${String(i).padStart(3, '0')};`);
    await eventually(() => bytes(c.got) === 200);
    const rtt = Date.now() - started;
    expect(rtt).toBeGreaterThanOrEqual(100); // at least the two latencies less their jitter
    expect(Buffer.concat(c.got).toString()).toBe(Array.from({ length: 50 }, (_, i) => `${String(i).padStart(3, '0')};`).join(''));
    c.s.destroy();
    await p.stop();

    const capped = new FaultProxy({ targets: () => [echoPort], up: { bytesPerSecond: 200_000 } });
    await capped.start();
    const d = await connect(capped.port);
    const t0 = Date.now();
    d.s.write(Buffer.alloc(100_000, 7));
    await eventually(() => bytes(d.got) === 100_000);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(400); // 100 kB at 200 kB/s
    d.s.destroy();
    await capped.stop();
  });

  it('stalls: nothing passes, then everything does, in order', async () => {
    const p = new FaultProxy({ targets: () => [echoPort] });
    await p.start();
    const c = await connect(p.port);
    const stall = p.stall(400);
    c.s.write('held');
    await new Promise((r) => setTimeout(r, 250));
    expect(bytes(c.got)).toBe(0);
    await stall;
    await eventually(() => Buffer.concat(c.got).toString() === 'held');
    c.s.destroy();
    await p.stop();
  });

  it('cuts with RST both ways and refuses new connections until restored', async () => {
    const p = new FaultProxy({ targets: () => [echoPort] });
    await p.start();
    const c = await connect(p.port);
    c.s.write('x');
    await eventually(() => bytes(c.got) === 1);
    const before = serverSide.length;
    const far = serverSide.at(-1)!;
    const farEvents: string[] = [];
    far.on('error', (e: NodeJS.ErrnoException) => farEvents.push(e.code ?? 'error'));
    p.cut();
    await eventually(() => c.events.includes('ECONNRESET') && farEvents.includes('ECONNRESET'));
    const refused = await connect(p.port).then((x) => new Promise<string[]>((r) => x.s.once('close', () => r(x.events))), (e: NodeJS.ErrnoException) => [e.code ?? 'error']);
    expect(refused).toContain('ECONNRESET');
    expect(serverSide.length).toBe(before); // nothing reached the server
    p.restore();
    const again = await connect(p.port);
    again.s.write('back');
    await eventually(() => Buffer.concat(again.got).toString() === 'back');
    again.s.destroy();
    await p.stop();
  });

  it('vanishes: no byte, no FIN, no RST; the far end closing meanwhile shows as a reset on return', async () => {
    const p = new FaultProxy({ targets: () => [echoPort] });
    await p.start();
    const c = await connect(p.port);
    c.s.write('a');
    await eventually(() => bytes(c.got) === 1);
    p.vanish();
    c.s.write('lost in the air');
    serverSide.at(-1)!.resetAndDestroy(); // the server gives up on the link
    await new Promise((r) => setTimeout(r, 400));
    expect([bytes(c.got), c.events]).toEqual([1, []]); // the phone sees nothing at all
    p.restore();
    await eventually(() => c.events.includes('ECONNRESET'));
    await p.stop();
  });

  it('connects to the next target when one does not listen', async () => {
    const dead = createServer();
    await new Promise<void>((r) => dead.listen(0, '127.0.0.1', r));
    const deadPort = (dead.address() as { port: number }).port;
    await new Promise((r) => dead.close(r));
    const p = new FaultProxy({ targets: () => [deadPort, echoPort] });
    await p.start();
    for (let i = 0; i < 2; i++) {
      const c = await connect(p.port);
      c.s.write('ok');
      await eventually(() => Buffer.concat(c.got).toString() === 'ok');
      c.s.destroy();
    }
    await p.stop();
  });
});
