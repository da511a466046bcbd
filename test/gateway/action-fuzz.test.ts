// Seeded fuzz of POST /action: 10,000 requests with random JSON values, byte strings and header
// values as body, token and Idempotency-Key, valid actions interleaved. No answer may be 5xx, the
// gateway must keep serving, and every 200 must be exactly one stream entry. Redis stops for a
// second partway, as a loaded machine can hold it up: answers wait for it, and none is a 503.
// Replay a failure with FUZZ_SEED=<seed>.
import { Agent, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeActionEntry } from '../../schemas/action-entry.js';
import { mintToken, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { LOADED_MACHINE_MS } from '../helpers/loaded-machine.js';
import { stallRedis, useRedis } from '../helpers/redis.js';
import { fuzzSeed, seededRandom } from '../helpers/seeded-random.js';

const redis = useRedis();
const REQUESTS = 10_000;
/** Redis stops for a second when this request goes out */
const STALL_AT = 3_000;
const STALL_MS = 1_000;
const seed = fuzzSeed();
let t: TestGateway;
let token: string;
beforeAll(async () => {
  // a Redis call waits as long as a loaded machine may hold Redis up: what is answered depends on the request alone
  t = await startTestGateway({ redisUrl: redis.get().server.url, overrides: { redisCommandTimeoutMs: LOADED_MACHINE_MS } });
  token = await mintToken(t, t.layoutId, t.apiKey);
});
afterAll(() => t.close());

/** One request, on a keep-alive agent of its own; resolves with the status (0: no answer). */
function post(agent: Agent, body: Buffer, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port: t.gw.port, path: '/action', method: 'POST', agent, headers: { 'content-length': body.length, ...headers } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
    req.setTimeout(5000, () => req.destroy());
    req.end(body);
  });
}

describe(`POST /action fuzz (seed ${seed})`, () => {
  it(`answers ${REQUESTS.toLocaleString('en')} random requests without a 5xx, and each 200 is one stream entry`, async () => {
    const random = seededRandom(seed);
    const int = (n: number) => Math.floor(random() * n);
    const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
    const anyJson = (depth = 0): unknown => {
      switch (int(depth > 3 ? 5 : 8)) {
        case 0: return null;
        case 1: return random() < 0.5;
        case 2: return pick([0, -1, 1.5, 1e308, -0, 2 ** 31, 2 ** 53, 0.5, 1]);
        case 3: return pick(['', 'x', 'é😀', '\u0000', '\ud800', 'a'.repeat(2000), '{"', '__proto__']);
        case 4: return pick([5, 1, 2, 'String', 'Slider', t.layoutId]);
        case 5: return Array.from({ length: int(4) }, () => anyJson(depth + 1));
        default: return Object.fromEntries(Array.from({ length: int(5) }, () => [pick(['layoutId', 'lid', 'type', 'value', 'extra', '__proto__', 'constructor']), anyJson(depth + 1)]));
      }
    };
    const bytes = (n: number) => Buffer.from(Array.from({ length: n }, () => int(256)));
    const headerValue = () => pick(['', 'x', 'Bearer', `Bearer ${token}x`, `bearer ${token}`, 'Bearer a.b.c', `Bearer ${token.replace(/.$/, 'A')}`, 'k'.repeat(100), 'ok-key', 'a b']);
    const agents = Array.from({ length: 8 }, () => new Agent({ keepAlive: true, maxSockets: 1 }));
    const valid: string[] = [];
    const statuses = new Map<number, number>();
    let next = 0;
    const makeRequest = (n: number): { body: Buffer; headers: Record<string, string>; value?: string } => {
      if (n % 4 === 0) {
        const value = `fuzz-${seed}-${n}`;
        return { body: Buffer.from(JSON.stringify({ layoutId: t.layoutId, lid: 5, type: 'String', value })), headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, value };
      }
      const body = random() < 0.2 ? bytes(int(300)) : Buffer.from(JSON.stringify(random() < 0.6 ? { layoutId: t.layoutId, lid: pick([1, 2, 3, 4, 5, 6, 99]), type: pick(['Button', 'Slider', 'Toggle', 'Index', 'String', 'XYPad', 'Knob']), value: anyJson() } : anyJson()) ?? 'null');
      const headers: Record<string, string> = { 'content-type': pick(['application/json', 'application/json; charset=utf-8', 'text/plain', 'application/jsonx']), authorization: random() < 0.7 ? `Bearer ${token}` : headerValue() };
      // keys unique per request (or invalid): a repeated key would be a 200 that rightly appends nothing
      if (random() < 0.3) headers['idempotency-key'] = pick(['a b', 'k'.repeat(65), '{x}', 'é', `k-${seed}-${n}`, `k-${seed}-${n}`]);
      return { body, headers };
    };
    let stalled: Promise<void> = Promise.resolve();
    await Promise.all(
      agents.map(async (agent) => {
        while (next < REQUESTS) {
          const n = next++;
          if (n === STALL_AT) stalled = stallRedis(redis.get().server, STALL_MS);
          const r = makeRequest(n);
          const status = await post(agent, r.body, r.headers);
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
          if (status >= 500 || status === 0) throw new Error(`fuzz seed ${seed}: request ${n} answered ${status}: ${JSON.stringify(r.headers)} ${r.body.toString('latin1').slice(0, 200)}`);
          if (r.value && status === 200) valid.push(r.value);
        }
      }),
    );
    await stalled;
    for (const a of agents) a.destroy();
    try {
      expect([...statuses.keys()].every((s) => s >= 200 && s < 500)).toBe(true);
      expect(valid).toHaveLength(REQUESTS / 4); // every interleaved valid action was accepted
      const accepted = statuses.get(200) ?? 0;
      const entries = await redis.get().client.xrange(t.gw.stores.keys.actions(t.layoutId), '-', '+');
      expect(entries).toHaveLength(accepted); // each 200 is exactly one entry
      const values = new Set(entries.map(([, f]) => decodeActionEntry(f)).flatMap((d) => (d.ok ? [d.entry.value] : [])));
      expect(valid.every((v) => values.has(v))).toBe(true);
    } catch (e) {
      throw new Error(`action fuzz failed with seed ${seed} (rerun: FUZZ_SEED=${seed} npx vitest run test/gateway/action-fuzz.test.ts): ${(e as Error).message}`, { cause: e });
    }
  }, 120_000);
});
