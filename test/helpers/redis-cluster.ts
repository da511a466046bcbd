// A real Redis Cluster per test file (bench/redis-cluster.ts): 3 masters and 3 replicas on
// free ports, with a short cluster-node-timeout so a failover takes about two seconds. Stopped,
// data and all, after the file's tests.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { startRedisCluster, type RedisCluster } from '../../bench/redis-cluster.js';

export type TestCluster = RedisCluster;

export function useRedisCluster(opts: { nodeTimeoutMs?: number; password?: string } = {}): { get: () => TestCluster } {
  let cluster: TestCluster | undefined;
  let dir = '';
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ac-cluster-'));
    cluster = await startRedisCluster({ dir, ...opts });
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  return {
    get: () => {
      if (!cluster) throw new Error('cluster not started');
      return cluster;
    },
  };
}
