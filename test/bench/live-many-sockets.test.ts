// bench -- live holds the gateway's sockets and the floor's at once and switches pages on each in turn
// (bench/live-many-sockets.ts). Each switch must be timed on its own target's sockets only, every
// target must get the same switches, and the crowd's frames must be counted per target.
import { createServer, type Server } from 'node:net';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import type * as ManySockets from '../../bench/live-many-sockets.js';
import type * as Servers from '../../bench/live-servers.js';

const dist = (file: string) => fileURLToPath(new URL(`../../dist/bench/${file}`, import.meta.url));

describe("the live scenario's sockets held on two targets at once", () => {
  it("times each page switch on its own target's sockets, the targets in turn", async () => {
    // from dist: the targets start the built floor (dist/bench/live-bare-uws.js) beside them
    const { bareTarget } = (await import(dist('live-servers.js'))) as typeof Servers;
    const { HeldSockets, measureSockets } = (await import(dist('live-many-sockets.js'))) as typeof ManySockets;
    const one = await bareTarget(1);
    const two = await bareTarget(2);
    const held: ManySockets.HeldSockets[] = [];
    try {
      held.push(await HeldSockets.open(one, 30, 30, 2));
      held.push(await HeldSockets.open(two, 40, 20, 3));
      const [a, b] = await measureSockets(held, { seconds: 1, switches: 2, switchWaitMs: 500 });
      expect([a!.served, b!.served]).toEqual([30, 40]);
      expect(a!.switches.map((s) => s.frames)).toEqual([30, 30]);
      expect(b!.switches.map((s) => s.frames)).toEqual([40, 40]);
      expect([a!.idle.length, b!.idle.length]).toEqual([1, 2]);
      expect(a!.crowdHz).toBeGreaterThan(0);
      expect(b!.crowdHz).toBeGreaterThan(0);
    } finally {
      for (const h of held) h.close();
      await Promise.all([one.stop(), two.stop()]);
    }
  });
});

describe("the live scenario's floor", () => {
  it('listens on a port that nobody held: one another process listens on is never drawn', async () => {
    // a port in the range the floor once drew from at random (20000 + 20000 × Math.random()), held
    // by another listener, as a test's Redis or gateway holds one beside the bench in npm test
    let held: Server | null = null;
    let port = 0;
    for (let i = 0; i < 50 && !held; i++) {
      port = 20_000 + Math.floor(Math.random() * 12_000);
      const server = createServer();
      held = await new Promise<Server | null>((resolve) => {
        server.once('error', () => resolve(null));
        server.listen(port, '127.0.0.1', () => resolve(server));
      });
    }
    expect(held, 'a port to hold').not.toBeNull();
    const { bareTarget } = (await import(dist('live-servers.js'))) as typeof Servers;
    // the first draw lands on the held port
    const draw = vi.spyOn(Math, 'random').mockReturnValueOnce((port - 20_000 + 0.5) / 20_000);
    try {
      const target = await bareTarget(2);
      expect(new URL(target.url).port).not.toBe(String(port));
      await target.stop();
    } finally {
      draw.mockRestore();
      await new Promise((r) => held!.close(r));
    }
  });
});
