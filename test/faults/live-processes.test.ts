// The live channel over three gateway processes (GATEWAY_WORKERS=2 and a single one) on one
// standalone Redis: page switch, key revocation and crowd values reach every socket on every
// process. Rerun with FUZZ_SEED=<seed>.
import { describe, it } from 'vitest';
import { randomPrefix, useRedis } from '../helpers/redis.js';
import { liveAcrossProcesses } from '../helpers/live-scenario.js';
import { fuzzSeed } from '../helpers/seeded-random.js';

const redis = useRedis();
const seed = fuzzSeed();

describe(`live channel over three gateway processes on standalone Redis (seed ${seed})`, () => {
  it('a page switch reaches every socket, a revoked key closes its sockets with 4001 everywhere, and every socket sees the merged crowd', async () => {
    await liveAcrossProcesses({ REDIS_URL: redis.get().server.url, REDIS_PREFIX: randomPrefix() }, seed, 'standalone');
  }, 90_000);
});
