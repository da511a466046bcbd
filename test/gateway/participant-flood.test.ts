// A flood from one token (5,000 actions a second, 250 times its budget) against a gateway process:
// it gets 429 and another participant's p99 stays within 2x of its quiet p99. It loads the machine on
// purpose and measures latency, so it runs alone (vitest.config.ts), after the parallel files.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configProperties } from '../../gateway/config.js';
import { mintToken, postAction, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';

const redis = useRedis();
/** The configuration's defaults of the per-participant limits (the helpers raise them for other tests). */
const defaults = configProperties();
const DEFAULT_LIMITS_ENV = Object.fromEntries(['actionRatePerSecond', 'actionBurst', 'stringRatePerSecond', 'stringBurst'].map((k) => [defaults[k]!['x-env'], String(defaults[k]!.default)]));
const slider = (t: TestGateway, value = 0.5) => ({ layoutId: t.layoutId, lid: 2, type: 'Slider', value });

const AUTOCANNON = fileURLToPath(new URL('../../node_modules/autocannon/autocannon.js', import.meta.url));
/**
 * The flood: 5,000 actions a second from one token, 250 times its budget. Unbounded, autocannon
 * takes the gateway's whole core on this 2-core machine (shared with the test, Redis and the
 * generator), and the second participant then waits behind a saturated CPU whatever a refusal
 * costs; a fixed rate measures what the flood's refusals cost the others.
 */
const FLOOD_RATE = 5000;

describe('a one-token flood (5,000 actions a second) against a gateway process', () => {
  let gw: GatewayProcess;
  let t: TestGateway;
  beforeAll(async () => {
    // seeded through an in-process gateway on the same data, then served by the real process
    const prefix = randomPrefix();
    t = await startTestGateway({ redisUrl: redis.get().server.url, prefix });
    gw = await spawnGateway({ REDIS_URL: redis.get().server.url, REDIS_PREFIX: prefix, ...DEFAULT_LIMITS_ENV });
  });
  afterAll(async () => {
    gw?.child.kill('SIGKILL');
    await t.close();
  });

  /** p99 of `count` sequential actions of a fresh token, in ms (each token's first 40 fit its burst, so tokens rotate). */
  async function p99(count: number): Promise<number> {
    const times: number[] = [];
    let token = '';
    for (let i = 0; i < count; i++) {
      if (i % 30 === 0) token = await mintToken({ url: gw.url }, t.layoutId, t.apiKey);
      const started = performance.now();
      const r = await postAction({ url: gw.url }, token, slider(t, (i % 100) / 100));
      times.push(performance.now() - started);
      expect(r.status).toBe(200);
    }
    times.sort((a, b) => a - b);
    return times[Math.floor(times.length * 0.99)]!;
  }

  // A p99 of 600 samples on each side is noisy: one quiet run at 5.89 ms against a flooded one at
  // 14.40 ms failed CI once, while five runs after it measured 1.10x to 1.37x. A flood that really
  // slows the other participant fails every attempt.
  it('gets 429 while a second participant’s p99 stays within 2x of its quiet p99', { timeout: 60_000, retry: 2 }, async () => {
    await p99(200); // warm
    const quiet = await p99(600);
    const flooder = await mintToken({ url: gw.url }, t.layoutId, t.apiKey);
    const flood = spawn(process.execPath, [AUTOCANNON, '-c', '4', '-R', String(FLOOD_RATE), '-d', '8', '-j', '-m', 'POST', '-H', 'content-type=application/json', '-H', `authorization=Bearer ${flooder}`, '-b', JSON.stringify(slider(t)), `${gw.url}/action`], { stdio: ['ignore', 'pipe', 'ignore'] });
    let report = '';
    flood.stdout.on('data', (d) => (report += d));
    const ended = new Promise((r) => flood.once('exit', r));
    try {
      await new Promise((r) => setTimeout(r, 1000)); // the flood is under way
      const started = Date.now();
      const loaded = await p99(600);
      expect(Date.now() - started).toBeLessThan(7000); // measured while the flood lasted
      console.log(`figure: second participant p99 quiet ${quiet.toFixed(2)} ms, under a one-token flood ${loaded.toFixed(2)} ms`);
      expect(loaded).toBeLessThanOrEqual(2 * quiet);
      await ended;
    } finally {
      flood.kill('SIGKILL');
    }
    const stats = JSON.parse(report) as { '2xx': number; non2xx: number; requests: { total: number } };
    console.log(`figure: flood ${stats.requests.total} requests, ${stats['2xx']} accepted, ${stats.non2xx} refused`);
    expect(stats.non2xx).toBeGreaterThan(1000);
    expect(stats['2xx']).toBeLessThan(40 + 20 * 10);
  });
});
