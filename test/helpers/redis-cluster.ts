// A real Redis Cluster per test file: 3 masters and 3 replicas (redis-server in cluster mode on free
// ports, AOF on, joined by `redis-cli --cluster create`), with a short cluster-node-timeout so a
// failover takes about two seconds. It is ready once every replica has synced with its master.
// Stopped, data and all, after the file's tests.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { freePort, waitForRedis } from '../../gateway/dev/redis-server.js';

export interface ClusterNode {
  port: number;
  child: ChildProcess;
}

export interface TestCluster {
  nodes: ClusterNode[];
  /** "127.0.0.1:port,..." for REDIS_CLUSTER_NODES */
  seeds: string;
  /** the port of the master that serves a key now */
  masterOf(key: string): Promise<number>;
  /** kill -9 one node */
  kill(port: number): Promise<void>;
  /** CLUSTER INFO's cluster_state as one node sees it */
  state(port: number): Promise<string>;
}

function cli(args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile('redis-cli', args, { timeout: 30_000 }, (err, stdout, stderr) => (err ? reject(new Error(`redis-cli ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout))),
  );
}

async function eventuallyTrue(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check().catch(() => false))) {
    if (Date.now() > until) throw new Error(`cluster: ${what} not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export function useRedisCluster(opts: { nodeTimeoutMs?: number } = {}): { get: () => TestCluster } {
  let cluster: TestCluster | undefined;
  let dir = '';
  const children: ChildProcess[] = [];
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ac-cluster-'));
    const nodes: ClusterNode[] = [];
    for (let i = 0; i < 6; i++) {
      const port = await freePort();
      const busPort = await freePort();
      const data = join(dir, String(port));
      mkdirSync(data);
      const child = spawn(
        'redis-server',
        ['--port', String(port), '--bind', '127.0.0.1', '--dir', data, '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-port', String(busPort),
          '--cluster-node-timeout', String(opts.nodeTimeoutMs ?? 1000), '--appendonly', 'yes', '--save', '', '--logfile', '', '--loglevel', 'warning'],
        { stdio: ['ignore', 'ignore', 'inherit'] },
      );
      children.push(child);
      nodes.push({ port, child });
    }
    await Promise.all(nodes.map((n) => waitForRedis(n.port)));
    await cli(['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '1', '--cluster-yes']);
    const info = async (port: number) => {
      const c = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      c.on('error', () => {});
      try {
        await c.connect();
        return await c.call('CLUSTER', 'INFO') as string;
      } finally {
        c.disconnect();
      }
    };
    await eventuallyTrue(async () => (await Promise.all(nodes.map((n) => info(n.port)))).every((i) => i.includes('cluster_state:ok') && i.includes('cluster_known_nodes:6')), 20_000, 'state ok on every node');
    // A replica that has not finished its first sync refuses to fail over (its data would be too
    // old), so a failover test must wait for every replica's link to its master.
    const linksUp = async () => (await Promise.all(nodes.map((n) => cli(['-p', String(n.port), 'INFO', 'replication'])))).filter((i) => i.includes('master_link_status:up')).length;
    await eventuallyTrue(async () => (await linksUp()) === 3, 30_000, 'every replica in sync');
    const seedPort = nodes[0]!.port;
    cluster = {
      nodes,
      seeds: nodes.map((n) => `127.0.0.1:${n.port}`).join(','),
      async masterOf(key) {
        const alive = nodes.filter((n) => n.child.exitCode === null && n.child.signalCode === null);
        const slot = Number((await cli(['-p', String(alive[0]?.port ?? seedPort), 'CLUSTER', 'KEYSLOT', key])).trim());
        const slots = JSON.parse(await cli(['-p', String(alive[0]?.port ?? seedPort), '--json', 'CLUSTER', 'SLOTS'])) as [number, number, [string, number]][];
        const range = slots.find(([from, to]) => slot >= from && slot <= to);
        if (!range) throw new Error(`no master serves slot ${slot}`);
        return range[2][1];
      },
      async kill(port) {
        const node = nodes.find((n) => n.port === port)!;
        if (node.child.exitCode !== null || node.child.signalCode !== null) return;
        const exited = new Promise((r) => node.child.once('exit', r));
        node.child.kill('SIGKILL');
        await exited;
      },
      async state(port) {
        return /cluster_state:(\w+)/.exec(await info(port))?.[1] ?? 'unknown';
      },
    };
  }, 60_000);
  afterAll(async () => {
    await Promise.all(
      children.map(async (c) => {
        if (c.exitCode !== null || c.signalCode !== null) return;
        const exited = new Promise((r) => c.once('exit', r));
        c.kill('SIGKILL');
        await exited;
      }),
    );
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  return {
    get: () => {
      if (!cluster) throw new Error('cluster not started');
      return cluster;
    },
  };
}
