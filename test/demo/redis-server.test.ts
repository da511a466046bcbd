// The private redis-server of the demo and the tests. A port handed out free must still be free
// when the process binds it, while other processes connect all the time: an outgoing connection
// takes its local port from the kernel's ephemeral range, so a port from that range can be taken
// between the check and the bind; one from below it cannot. A server that fails to start says why,
// and one whose starter dies ends with it.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort, startRedisServer } from '../../dev/redis-server.js';
import { eventually } from '../helpers/gateway.js';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return !readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.startsWith('Z');
  } catch {
    return false;
  }
};

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

  it('ends when the process that started it is killed (kill -9), and holds no pipe of the processes above it', async () => {
    // a bench or a demo that crashed used to leave its Redis running, holding the stderr it inherited:
    // a parent waiting for that pipe to close (npm run bench) waited for ever
    const dir = mkdtempSync(join(tmpdir(), 'ac-redis-orphan-'));
    const module = new URL('../../dist/dev/redis-server.js', import.meta.url).href; // built by the global setup
    const starter = spawn(process.execPath, ['--input-type=module', '-e', `const { startRedisServer } = await import(${JSON.stringify(module)}); const r = await startRedisServer({ dir: ${JSON.stringify(dir)}, appendOnly: false }); console.log('redis', r.pid); setInterval(() => {}, 1000);`], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    starter.stdout.on('data', (d) => (out += d));
    const pipesClosed = Promise.all([new Promise((r) => starter.stdout.once('close', r)), new Promise((r) => starter.stderr.once('close', r))]);
    let redisPid = 0;
    try {
      await eventually(() => /redis (\d+)/.test(out), 15_000);
      redisPid = Number(/redis (\d+)/.exec(out)![1]);
      expect(alive(redisPid)).toBe(true);
      starter.kill('SIGKILL');
      await eventually(() => !alive(redisPid), 10_000);
      await pipesClosed;
    } finally {
      starter.kill('SIGKILL');
      if (redisPid && alive(redisPid)) process.kill(redisPid, 'SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
