// bench -- live holds the gateway's sockets and the floor's at once and switches pages on each in turn
// (bench/live-many-sockets.ts). Each switch must be timed on its own target's sockets only, every
// target must get the same switches, and the crowd's frames must be counted per target.
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
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
