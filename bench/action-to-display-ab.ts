// Interleaved A/B of the end-to-end figure (bench/action-to-display.ts): one gateway (this build), and two
// bridge builds in the order A B B A at each tick rate, at 2,000 actions/s.
//   npm run bench:e2e-ab -- --base /path/to/other/dist [--hz 1000,100]
import { parseArgs } from 'node:util';
import { join } from 'node:path';
import { BRIDGE, measureEndToEnd } from './action-to-display.js';
import { pinProcess, pinnedRedis, spawnPinnedGateway, stopChild } from './harness.js';
import { mintTokens, seedDemo } from './audience.js';

const { values } = parseArgs({ options: { base: { type: 'string', default: '' }, hz: { type: 'string', default: '1000,100' } } });
if (!values.base) throw new Error('give --base /path/to/other/dist (its bridge is A; this build is B)');

async function main(): Promise<void> {
  await pinProcess(1);
  const redis = await pinnedRedis(1);
  try {
    const key = await seedDemo(redis.url);
    const gw = await spawnPinnedGateway(redis.url);
    try {
      const tokens = await mintTokens(gw.url, key.apiKey, key.layoutId, 2000);
      const builds = { A: join(values.base, 'bridge', 'main.js'), B: BRIDGE };
      process.stdout.write(`A = ${builds.A}, B = ${builds.B}; 2,000 actions/s open loop, 5 s a run; gateway on core 0, the rest on core 1\n\n`);
      process.stdout.write('| run | bridge | e2e p50 / p99 / p99.9 / max ms | received of accepted | HTTP p50 / p99 ms |\n|---|---|---|---|---|\n');
      for (const tickHz of values.hz.split(',').map(Number)) {
        for (const which of ['A', 'B', 'B', 'A'] as const) {
          const e = await measureEndToEnd({ url: gw.url, tokens, redisUrl: redis.url, tickHz, rate: 2000, bridge: builds[which] });
          process.stdout.write(`| ${which} | ${tickHz} Hz | ${e.p50} / ${e.p99} / ${e.p999} / ${e.max} | ${e.received} of ${e.accepted} | ${e.http.latencyMs.p50.toFixed(2)} / ${e.http.latencyMs.p99.toFixed(2)} |\n`);
        }
      }
    } finally {
      await stopChild(gw.child);
    }
  } finally {
    await redis.stop();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`e2e-ab: ${String(e)}\n`);
  process.exit(1);
});
