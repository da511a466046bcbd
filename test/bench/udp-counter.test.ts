// bench -- bridge drains two backlogs against one UDP sink (bench/udp-counter.ts) and measures each
// drain's messages/s from the sink's counts: the line `reset` must zero them, or the second drain
// would be measured from the first one's first datagram.
import { spawn } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { oscMinBundle, oscMinPacket } from '../helpers/osc-oracle.js';
import { killAfterEach } from '../helpers/processes.js';

const SINK = fileURLToPath(new URL('../../dist/bench/udp-counter.js', import.meta.url));

/** An OSC message with no arguments, or a bundle of such messages (osc-min, the tests' oracle). */
const message = (address: string) => oscMinPacket({ address, args: [] });
const bundle = (...addresses: string[]) => oscMinBundle([0, 1], addresses.map((address) => ({ address, args: [] })));

const tracked = killAfterEach();

describe('the bench UDP sink', () => {
  it('counts the messages inside bundles, and starts again from zero on `reset`', async () => {
    const child = tracked(spawn(process.execPath, [SINK], { stdio: ['pipe', 'pipe', 'inherit'] }));
    const lines = createInterface({ input: child.stdout });
    const nextLine = () => new Promise<string>((r) => lines.once('line', r));
    const port = Number((await nextLine()).split(' ')[1]);
    type Counts = { datagrams: number; messages: number; bytes: number; first: number; last: number };
    const ask = async (line = '') => {
      child.stdin.write(`${line}\n`);
      return JSON.parse(await nextLine()) as Counts;
    };
    const udp = createSocket('udp4');
    const send = (d: Buffer) => new Promise<void>((r) => udp.send(d, port, '127.0.0.1', () => r()));
    const until = async (datagrams: number) => {
      for (let i = 0; i < 100; i++) {
        const c = await ask();
        if (c.datagrams >= datagrams) return c;
        await new Promise((r) => setTimeout(r, 20));
      }
      throw new Error(`the sink did not get ${datagrams} datagrams`);
    };
    try {
      await send(bundle('/1', '/2'));
      await send(message('/3'));
      const before = await until(2);
      expect(before).toMatchObject({ datagrams: 2, messages: 3 });
      expect(before.first).toBeGreaterThan(0);

      expect(await ask('reset')).toEqual({ datagrams: 0, messages: 0, bytes: 0, first: 0, last: 0 });

      await new Promise((r) => setTimeout(r, 5));
      await send(bundle('/4'));
      const after = await until(1);
      expect(after).toMatchObject({ datagrams: 1, messages: 1 });
      expect(after.first).toBeGreaterThan(before.last); // measured from the datagram after the reset
    } finally {
      udp.close();
    }
  });
});
