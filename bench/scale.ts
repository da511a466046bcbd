// Scaling figures: what one Redis master absorbs for one layout (the gateway's append script), and
// POST /action with GATEWAY_WORKERS=1 and 2 against one Redis and with one worker against a Redis
// Cluster of 3 masters (each with a replica), measured side by side in one run with wrk (100
// connections, control mix over 2,000 tokens). What a 2-core machine can show:
// wrk and Redis need a core too, so two workers compete with them for the same two cores; the
// figures say what a worker process costs and that the paths work, not how far a big host scales.
//   npm run bench -- scale [--seconds 10]
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startRedisCluster } from './redis-cluster.js';
import { freePort } from '../dev/redis-server.js';
import { GATEWAY_NODE_FLAGS } from '../gateway/node-flags.js';
import { RedisKeys } from '../gateway/store/keys.js';
import { runScript } from '../gateway/store/scripts.js';
import { ACTION_FIELD, encodeActionEntry } from '../schemas/action-entry.js';
import { createRedisClient } from '../runtime/redis.js';
import { BENCH_LIMITS } from './limits.js';
import { cpuSeconds, pinnedRedis, spawnPinned, stopChild, wrkLoad, type LoadResult } from './harness.js';
import { actionRequests, mintTokens, seedDemo } from './audience.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '10' } } });
const SECONDS = Number(values.seconds);
const GATEWAY = fileURLToPath(new URL('../gateway/main.js', import.meta.url));

function progress(what: string): void {
  process.stderr.write(`bench: ${what}\n`);
}

async function measure(name: string, env: Record<string, string>, apiKey: string): Promise<LoadResult> {
  // not pinned to one core: two workers need both (taskset -c 0-1)
  const marker = Number(env.GATEWAY_WORKERS ?? 1) > 1 ? /audience-gateway workers listening/ : /audience-gateway listening/;
  const port = await freePort();
  const gw = await spawnPinned('0-1', GATEWAY, [], { ...BENCH_LIMITS, ...env, PORT: String(port), OPS_PORT: '0', LOG_LEVEL: 'info' }, marker, [...GATEWAY_NODE_FLAGS]);
  const url = `http://127.0.0.1:${port}`;
  try {
    const tokens = await mintTokens(url, apiKey, 'demo-show', 2000);
    progress(`${name}, ${SECONDS} s`);
    return await wrkLoad({ name, url, connections: 100, durationSec: SECONDS, requests: actionRequests(tokens, 'demo-show') });
  } finally {
    await stopChild(gw.child);
  }
}

/**
 * What one Redis master absorbs for one layout: the gateway's own append script (Lua batches of
 * 256 entries, MAXLEN trimming, AOF on) called by 8 callers at once for `seconds`, from this process.
 */
async function masterCeiling(url: string, pid: number, seconds: number): Promise<{ entriesPerSec: number; redisCpuShare: number }> {
  const redis = createRedisClient({ url }, { name: 'bench-append', commandTimeoutMs: 5000, reconnectStepMs: 100, maxReconnectDelayMs: 100 });
  await redis.connect();
  const payloads = Array.from({ length: 256 }, (_, i) => encodeActionEntry({ v: 1, id: randomUUID(), layoutId: 'demo-show', lid: 2, address: '/002', type: 'Slider', value: (i % 100) / 100, ts: Date.now() }));
  const key = new RedisKeys('ac:').actions('ceiling-show');
  let entries = 0;
  const cpuBefore = cpuSeconds(pid);
  const started = performance.now();
  const until = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (performance.now() < until) {
        await runScript(redis, 'appendActions', [key], [100_000, `${Date.now() - 120_000}-0`, ACTION_FIELD, ...payloads]);
        entries += payloads.length;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  redis.disconnect();
  return { entriesPerSec: entries / elapsed, redisCpuShare: (cpuSeconds(pid) - cpuBefore) / elapsed };
}

async function main(): Promise<void> {
  const results: LoadResult[] = [];
  const redis = await pinnedRedis(1);
  let ceiling: { entriesPerSec: number; redisCpuShare: number };
  try {
    progress(`one Redis master: appends of one layout (Lua batches of 256), ${SECONDS} s`);
    ceiling = await masterCeiling(redis.url, redis.pid!, SECONDS);
    const { apiKey } = await seedDemo(redis.url);
    for (const workers of ['1', '2']) results.push(await measure(`POST /action, ${workers} gateway worker${workers === '1' ? '' : 's'}, one Redis`, { REDIS_URL: redis.url, GATEWAY_WORKERS: workers }, apiKey));
  } finally {
    await redis.stop();
  }
  const dir = mkdtempSync(join(tmpdir(), 'ac-bench-cluster-'));
  progress('starting a Redis Cluster: 3 masters, 3 replicas');
  const cluster = await startRedisCluster({ dir });
  try {
    const target = { url: 'redis://127.0.0.1:1', clusterNodes: cluster.seeds.split(',') };
    const { apiKey } = await seedDemo(target);
    results.push(await measure('POST /action, 1 gateway worker, Redis Cluster (3 masters + 3 replicas)', { REDIS_CLUSTER_NODES: cluster.seeds }, apiKey));
  } finally {
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  const base = results[0]!.requestsPerSec;
  process.stdout.write(`\nmachine: ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), Node ${process.version}; wrk on core 1, 100 connections, ${SECONDS} s each, one run, side by side\n\n`);
  process.stdout.write('| scenario | req/s | × 1 worker | p50 ms | p99 ms | non-2xx | errors |\n|---|---|---|---|---|---|---|\n');
  for (const r of results) {
    process.stdout.write(`| ${r.name} | ${Math.round(r.requestsPerSec)} | ${(r.requestsPerSec / base).toFixed(2)} | ${r.latencyMs.p50} | ${r.latencyMs.p99} | ${r.non2xx} | ${r.errors} |\n`);
  }
  process.stdout.write(`\none Redis master, one layout's stream: ${Math.round(ceiling.entriesPerSec)} entries/s appended by the gateway's script (Lua batches of 256, AOF everysec, Redis at ${ceiling.redisCpuShare.toFixed(2)} of a core)\n`);
  process.stdout.write('\nscale done\n');
}

main().catch((e: unknown) => {
  process.stderr.write(`bench: ${String(e)}\n`);
  process.exit(1);
});
