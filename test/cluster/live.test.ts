// The live channel over three gateway processes (GATEWAY_WORKERS=2 and a single one) on a real
// 3-master Redis Cluster: crowd summaries ride each layout's sharded channel (SPUBLISH/SSUBSCRIBE
// in the layout's hash slot); page switch, key revocation and crowd values reach every socket on
// every process. Rerun with FUZZ_SEED=<seed>.
import { describe, it } from 'vitest';
import { liveAcrossProcesses } from '../helpers/live-scenario.js';
import { useRedisCluster } from '../helpers/redis-cluster.js';
import { fuzzSeed } from '../helpers/seeded-random.js';

const cluster = useRedisCluster();
const seed = fuzzSeed();

describe(`live channel over three gateway processes on Redis Cluster (seed ${seed})`, () => {
  it('a page switch reaches every socket, a revoked key closes its sockets with 4001 everywhere, and every socket sees the merged crowd', async () => {
    // REDIS_URL points nowhere: only the cluster may be used
    await liveAcrossProcesses({ REDIS_URL: 'redis://127.0.0.1:1', REDIS_PREFIX: 'ac:', REDIS_CLUSTER_NODES: cluster.get().seeds }, seed, 'cluster');
  }, 120_000);
});
