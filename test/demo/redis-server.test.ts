// The private redis-server of the demo and the tests. A port handed out free must still be free
// when the process binds it, while other processes connect all the time: an outgoing connection
// takes its local port from the kernel's ephemeral range, so a port from that range can be taken
// between the check and the bind; one from below it cannot. A server that fails to start says why.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort, startRedisServer } from '../../gateway/dev/redis-server.js';

const [ephemeralLow] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);

describe('freePort', () => {
  it('hands out ports below the ephemeral range (no outgoing connection takes one), free to bind, and spread out', async () => {
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(1024);
      expect(port).toBeLessThan(ephemeralLow!);
    }
    expect(new Set(ports).size).toBeGreaterThan(15); // two callers at once rarely get the same one
    const server = createServer();
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(ports[0], '127.0.0.1', resolve));
    await new Promise((r) => server.close(r));
  });

});

describe('startRedisServer', () => {
  it('names the reason Redis gave when it cannot start', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ac-redis-fail-'));
    try {
      // an address this host does not have (TEST-NET-1): Redis cannot listen and exits
      await expect(startRedisServer({ dir, appendOnly: false, extraArgs: ['--bind', '192.0.2.1'] })).rejects.toThrow(/exited with code 1: .*(Cannot assign requested address|Failed listening)/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
