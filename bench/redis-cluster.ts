// Runs a private Redis Cluster on loopback: 3 masters and `replicas` replicas each (redis-server in
// cluster mode on free ports, AOF on, joined by `redis-cli --cluster create`), for the tests and the
// benchmarks. Ready once every node sees the cluster ok and every replica has synced (until then a
// replica refuses to fail over: its data would be too old).
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort, waitForRedis } from '../dev/redis-server.js';

export interface ClusterNode {
  port: number;
  child: ChildProcess;
}

export interface RedisCluster {
  nodes: ClusterNode[];
  /** "127.0.0.1:port,..." for REDIS_CLUSTER_NODES */
  seeds: string;
  /** the port of the master that serves a key now */
  masterOf(key: string): Promise<number>;
  /** kill -9 one node */
  kill(port: number): Promise<void>;
  /** CLUSTER INFO's cluster_state as one node sees it */
  state(port: number): Promise<string>;
  /** kill -9 every node (the data directory is the caller's) */
  stop(): Promise<void>;
}

export interface RedisClusterOptions {
  /** data directory: one folder per node below it */
  dir: string;
  /** replicas per master (default 1) */
  replicas?: number;
  /** cluster-node-timeout: how long a master may be silent before its replica takes over (default 1000) */
  nodeTimeoutMs?: number;
  /** requirepass (and masterauth) on every node */
  password?: string;
}

function cli(args: string[], password?: string): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile('redis-cli', [...(password ? ['-a', password, '--no-auth-warning'] : []), ...args], { timeout: 30_000 }, (err, stdout, stderr) => (err ? reject(new Error(`redis-cli ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout))),
  );
}

async function eventuallyTrue(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check().catch(() => false))) {
    if (Date.now() > until) throw new Error(`cluster: ${what} not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** CLUSTER INFO of one node, on a connection of its own. */
async function info(port: number, password?: string): Promise<string> {
  const c = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, ...(password && { password }) });
  c.on('error', () => {});
  try {
    await c.connect();
    return (await c.call('CLUSTER', 'INFO')) as string;
  } finally {
    c.disconnect();
  }
}

export async function startRedisCluster(opts: RedisClusterOptions): Promise<RedisCluster> {
  const replicas = opts.replicas ?? 1;
  const nodes: ClusterNode[] = [];
  const stop = async () => {
    await Promise.all(
      nodes.map(async ({ child: c }) => {
        if (c.exitCode !== null || c.signalCode !== null) return;
        const exited = new Promise((r) => c.once('exit', r));
        c.kill('SIGKILL');
        await exited;
      }),
    );
  };
  /**
   * One node on free ports. A port found free can be taken by another process before redis-server
   * binds it (tests run in parallel): the node then exits at once, or another server answers on
   * its port. So a node counts only once the server answering is this child (its pid), and a node
   * that lost its ports is started again on others.
   */
  const startNode = async (): Promise<ClusterNode> => {
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      const busPort = await freePort();
      const data = join(opts.dir, String(port));
      mkdirSync(data, { recursive: true });
      const child = spawn(
        'redis-server',
        ['--port', String(port), '--bind', '127.0.0.1', '--dir', data, '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-port', String(busPort),
          '--cluster-node-timeout', String(opts.nodeTimeoutMs ?? 1000), '--appendonly', 'yes', '--save', '', '--logfile', '', '--loglevel', 'warning',
          ...(opts.password ? ['--requirepass', opts.password, '--masterauth', opts.password] : [])],
        { stdio: ['ignore', 'ignore', 'ignore'] },
      );
      const node = { port, child };
      nodes.push(node);
      const exited = new Promise<false>((r) => child.once('exit', () => r(false)));
      const up = waitForRedis(port).then(
        () => true,
        () => false,
      );
      const mine = (await Promise.race([up, exited])) && (await cli(['-p', String(port), 'INFO', 'server'], opts.password).catch(() => '')).includes(`process_id:${child.pid}\r`);
      if (mine) return node;
      nodes.splice(nodes.indexOf(node), 1);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      if (attempt >= 5) throw new Error(`redis-server would not start on a free port (${attempt} attempts)`);
    }
  };
  try {
    await Promise.all(Array.from({ length: 3 * (1 + replicas) }, startNode));
    await cli(['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', String(replicas), '--cluster-yes'], opts.password);
    await eventuallyTrue(async () => (await Promise.all(nodes.map((n) => info(n.port, opts.password)))).every((i) => i.includes('cluster_state:ok') && i.includes(`cluster_known_nodes:${nodes.length}`)), 20_000, 'state ok on every node');
    const linksUp = async () => (await Promise.all(nodes.map((n) => cli(['-p', String(n.port), 'INFO', 'replication'], opts.password)))).filter((i) => i.includes('master_link_status:up')).length;
    await eventuallyTrue(async () => (await linksUp()) === 3 * replicas, 30_000, 'every replica in sync');
  } catch (e) {
    await stop();
    throw e;
  }
  const alive = () => nodes.filter((n) => n.child.exitCode === null && n.child.signalCode === null);
  return {
    nodes,
    seeds: nodes.map((n) => `127.0.0.1:${n.port}`).join(','),
    async masterOf(key) {
      const port = String(alive()[0]!.port);
      const slot = Number((await cli(['-p', port, 'CLUSTER', 'KEYSLOT', key], opts.password)).trim());
      const slots = JSON.parse(await cli(['-p', port, '--json', 'CLUSTER', 'SLOTS'], opts.password)) as [number, number, [string, number]][];
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
      return /cluster_state:(\w+)/.exec(await info(port, opts.password))?.[1] ?? 'unknown';
    },
    stop,
  };
}
