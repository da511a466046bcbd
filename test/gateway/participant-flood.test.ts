// A flood from one token (5,000 actions a second, 250 times its budget) against a gateway process:
// it gets 429 and another participant's p99 stays within 2x of its quiet p99. It loads the machine on
// purpose and measures latency, so it runs alone (vitest.config.ts), after the parallel files.
// Both the flood and the other participant come from the project's open-loop generator
// (bench/open-loop.ts), each in a small process of its own.
import { spawn } from 'node:child_process';
import { setPriority } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LoadResult } from '../../bench/harness.js';
import type { OpenLoopSpec } from '../../bench/open-loop.js';
import { configProperties } from '../../gateway/config.js';
import { mintToken, postAction, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';

const redis = useRedis();
/** The configuration's defaults of the per-participant limits (the helpers raise them for other tests). */
const defaults = configProperties();
const DEFAULT_LIMITS_ENV = Object.fromEntries(['actionRatePerSecond', 'actionBurst', 'stringRatePerSecond', 'stringBurst'].map((k) => [defaults[k]!['x-env'], String(defaults[k]!.default)]));
const slider = (t: TestGateway, value = 0.5) => ({ layoutId: t.layoutId, lid: 2, type: 'Slider', value });

/** the open-loop generator, as built (the gateway process runs from dist/ too) */
const OPEN_LOOP = new URL('../../dist/bench/open-loop.js', import.meta.url).href;
/**
 * The flood: 5,000 actions a second from one token, 250 times its budget. An unbounded flood
 * takes the gateway's whole core on this 2-core machine (shared with the test, Redis and the
 * generator), and the second participant then waits behind a saturated CPU whatever a refusal
 * costs; a fixed rate measures what the flood's refusals cost the others.
 */
const FLOOD_RATE = 5000;
/** each flood's seconds; the flooded samples are taken from its second second on */
const FLOOD_S = 6;
const ROUNDS = 3;
/**
 * The other participant: SAMPLE_RATE actions a second for SAMPLE_S seconds each round and side,
 * in turns from SAMPLE_TOKENS tokens (10 a second each, half the budget), so 1,800 samples a side
 * and the p99 is their 18th slowest.
 */
const SAMPLE_RATE = 200;
const SAMPLE_S = 3;
const SAMPLE_TOKENS = 20;

/** An open-loop run's result, with when it ran (ms since the epoch) and each request's latency. */
interface Run {
  result: LoadResult;
  from: number;
  to: number;
  latencies: number[];
}
/** A run under way: `kill` ends it, and a run killed says nothing more. */
interface Running {
  run: Promise<Run>;
  kill: () => void;
}
/** An open-loop run in a process of its own, at `niceness` (0: as the gateway). */
function runOpenLoop(spec: OpenLoopSpec, niceness: number): Running {
  let child: ReturnType<typeof spawn> | undefined;
  let stopped = false;
  const script = `const { openLoop } = await import(${JSON.stringify(OPEN_LOOP)});
const spec = JSON.parse(process.argv[1]);
const latencyAt = new Float64Array(Math.round(spec.rate * spec.durationSec)).fill(NaN);
const from = Date.now();
const result = await openLoop({ ...spec, latencyAt });
process.stdout.write(JSON.stringify({ result, from, to: Date.now(), latencies: Array.from(latencyAt) }));`;
  const run = new Promise<Run>((resolve, reject) => {
    child = spawn(process.execPath, ['--input-type=module', '-e', script, JSON.stringify(spec)], { stdio: ['ignore', 'pipe', 'inherit'] });
    if (niceness !== 0 && child.pid !== undefined) setPriority(child.pid, niceness);
    let text = '';
    child.stdout!.on('data', (d) => (text += d));
    child.once('exit', (code, signal) => {
      if (stopped) return; // killed after a failed check, which is the test's error
      try {
        resolve(JSON.parse(text) as Run);
      } catch {
        reject(new Error(`the ${spec.name} generator ended (${signal ?? code}) with no result: ${text.slice(0, 200)}`));
      }
    });
  });
  return {
    run,
    kill: () => {
      stopped = true;
      child?.kill('SIGKILL');
    },
  };
}

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

  const action = (token: string, value: number) => ({ method: 'POST' as const, path: '/action', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify(slider(t, value)) });

  /**
   * The other participant's tokens, each verified by one action first: a participant makes one
   * such action a token, and the samples time the actions after it.
   */
  async function participantTokens(): Promise<string[]> {
    const tokens: string[] = [];
    for (let i = 0; i < SAMPLE_TOKENS; i++) {
      const token = await mintToken({ url: gw.url }, t.layoutId, t.apiKey);
      expect((await postAction({ url: gw.url }, token, slider(t))).status).toBe(200);
      tokens.push(token);
    }
    return tokens;
  }

  /** One side's samples of a round: the other participant's actions, each accepted. */
  function sample(tokens: readonly string[]): Running {
    const spec: OpenLoopSpec = { name: 'participant', url: gw.url, rate: SAMPLE_RATE, durationSec: SAMPLE_S, connections: 2, requests: tokens.map((token, i) => action(token, i / tokens.length)) };
    return runOpenLoop(spec, 0);
  }

  /**
   * A flood of FLOOD_S seconds from a fresh token: requests leave evenly spaced (autocannon spends
   * its rate in bursts). Its process runs at the lowest priority: a flood comes from phones
   * elsewhere, and on this host its generator's own CPU would otherwise be taken from the gateway
   * and the other participant, beside whatever else runs (in CI's full run beside a busy process,
   * 4.00 ms quiet against 7.83 flooded at the normal priority).
   */
  async function flood(): Promise<Running> {
    const flooder = await mintToken({ url: gw.url }, t.layoutId, t.apiKey);
    return runOpenLoop({ name: 'flood', url: gw.url, rate: FLOOD_RATE, durationSec: FLOOD_S, connections: 8, requests: [action(flooder, 0.5)] }, 19);
  }

  const p99 = (times: number[]) => [...times].sort((a, b) => a - b)[Math.floor(times.length * 0.99)]!;
  const accepted = (r: Run) => {
    expect(r.result.statuses).toEqual({ 200: SAMPLE_RATE * SAMPLE_S });
    expect(r.result.errors).toBe(0);
    return r.latencies;
  };

  // Quiet and flooded samples are taken in turns, ROUNDS of each, and each side's p99 is over all
  // its samples: a machine whose load drifts (another process, a neighbour on the host) then weighs
  // on both sides alike. The other participant is a lean client in its own process: timed with
  // fetch inside the test's process, its quiet p99 (6 to 9 ms against a median of 1 ms) was the
  // test process's own stalls, and one quiet p99 against one flooded p99 of 600 such samples each
  // went past 2x on a quiet machine with no fault in the gateway. A gateway that spends 400 µs on
  // each refusal fails every attempt.
  it('gets 429 while a second participant’s p99 stays within 2x of its quiet p99', { timeout: 120_000, retry: 2 }, async () => {
    const tokens = await participantTokens();
    const quiet: number[] = [];
    const loaded: number[] = [];
    const floods: LoadResult[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const q = sample(tokens);
      try {
        quiet.push(...accepted(await q.run));
      } finally {
        q.kill();
      }
      const f = await flood();
      let s: Running | undefined;
      try {
        await new Promise((r) => setTimeout(r, 1000)); // the flood is under way
        s = sample(tokens);
        const during = await s.run;
        const flooded = await f.run;
        // the samples were taken while the flood ran
        expect(during.from).toBeGreaterThan(flooded.from);
        expect(during.to).toBeLessThan(flooded.to);
        loaded.push(...accepted(during));
        floods.push(flooded.result);
      } finally {
        s?.kill();
        f.kill();
      }
    }
    console.log(`figure: second participant p99 quiet ${p99(quiet).toFixed(2)} ms, under a one-token flood ${p99(loaded).toFixed(2)} ms (${ROUNDS} rounds of ${SAMPLE_RATE * SAMPLE_S} each)`);
    expect(p99(loaded)).toBeLessThanOrEqual(2 * p99(quiet));
    for (const r of floods) {
      console.log(`figure: flood ${r.total} requests at ${Math.round(r.requestsPerSec)} a second: ${JSON.stringify(r.statuses)}`);
      expect(r.statuses?.['429']).toBeGreaterThan((FLOOD_RATE * FLOOD_S) / 2); // refused, and the flood came at least at half its rate
      expect(r.statuses?.['200']).toBeLessThan(40 + 20 * (FLOOD_S + 2)); // a burst, then 20 a second
      expect(r.total - (r.statuses?.['429'] ?? 0) - (r.statuses?.['200'] ?? 0)).toBe(0); // nothing else
      expect(r.errors).toBe(0); // and every request answered
    }
  });
});
