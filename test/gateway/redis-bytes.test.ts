// What an action takes in Redis's memory, the figures docs/security.md and docs/api.md size Redis
// with: a stream entry, ordinary (a Button, a Slider) and the largest a participant can make (a
// String of 1,024 characters outside the BMP, four bytes of UTF-8 each: the gateway strips the
// control characters JSON would escape to six, and `"` or `\` take two); and an Idempotency-Key's
// record, in a participant's window of up to 128 keys (Redis's listpack) and of 1,000 (a hash
// table). Each is the growth of `MEMORY USAGE` (every node sampled) divided by what was added.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken, postAction, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { recordFigure } from '../helpers/figures.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
let t: TestGateway;
let token: string;
beforeAll(async () => {
  const plenty = { actionRatePerSecond: 10_000, actionBurst: 10_000, stringRatePerSecond: 10_000, stringBurst: 10_000, idempotencyTtlSeconds: 3600, idempotencyKeysPerParticipant: 1000 };
  t = await startTestGateway({ redisUrl: redis.get().server.url, overrides: plenty });
  token = await mintToken(t, t.layoutId, t.apiKey);
});
afterAll(() => t.close());

const memoryUsage = async (key: string) => Number((await redis.get().client.call('MEMORY', 'USAGE', key, 'SAMPLES', '0')) ?? 0);
const streamBytes = () => memoryUsage(t.gw.stores.keys.actions(t.layoutId));

/** A token's `sub`, as the gateway names its Idempotency-Key hashes by it. */
const claimsOf = (token: string) => (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { sub: string }).sub;

/** The stream's growth in bytes per action over `n` actions, each answered 200 before the next is sent in its batch of 50. */
async function bytesPerAction(n: number, action: (i: number) => object): Promise<number> {
  const before = await streamBytes();
  for (let i = 0; i < n; i += 50) {
    const answers = await Promise.all(Array.from({ length: 50 }, (_, j) => postAction(t, token, { layoutId: t.layoutId, ...action(i + j) })));
    expect(answers.map((a) => a.status)).toEqual(Array(50).fill(200));
  }
  return ((await streamBytes()) - before) / n;
}

describe('what an action takes in Redis', () => {
  it('an ordinary action (Button and Slider) takes under 300 bytes', async () => {
    await postAction(t, token, { layoutId: t.layoutId, lid: 1, type: 'Button' }); // the stream and its first node exist before the baseline
    const bytes = await bytesPerAction(400, (i) => (i % 2 === 0 ? { lid: 1, type: 'Button' } : { lid: 2, type: 'Slider', value: (i % 100) / 100 }));
    recordFigure('redis_bytes_per_ordinary_action', bytes, 'bytes', '300 (docs/security.md)');
    expect(bytes).toBeGreaterThan(0);
    expect(bytes).toBeLessThan(300);
  });

  it('the largest entry (a String of 1,024 characters of four bytes each) takes under 6,000 bytes', async () => {
    const value = '\u{1F600}'.repeat(1024); // 1,024 code points (what maxLength counts), 4,096 bytes of UTF-8
    const bytes = await bytesPerAction(100, () => ({ lid: 5, type: 'String', value }));
    recordFigure('redis_bytes_per_largest_action', bytes, 'bytes', '6000 (docs/security.md)');
    expect(bytes).toBeGreaterThan(4 * 1024);
    expect(bytes).toBeLessThan(6000);
  });

  it.each([
    [100, 80],
    [1000, 130],
  ])("an Idempotency-Key's record, %i in one participant's window, takes under %i bytes", async (n, bound) => {
    const mine = await mintToken(t, t.layoutId, t.apiKey); // a participant of its own: one hash, empty before
    const window = Math.floor(Date.now() / 3_600_000); // the hour-long window (idempotencyTtlSeconds) these fall in, or one beside it
    for (let i = 0; i < n; i += 50) {
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, j) => postAction(t, mine, { layoutId: t.layoutId, lid: 1, type: 'Button' }, { 'idempotency-key': `k-${i + j}-${'x'.repeat(20)}` })),
      );
      expect(answers.map((a) => a.status)).toEqual(Array(50).fill(200));
    }
    const keys = [window - 1, window, window + 1].map((g) => t.gw.stores.keys.actionOnce(t.layoutId, claimsOf(mine), g));
    const records = (await Promise.all(keys.map((k) => redis.get().client.hlen(k)))).reduce((a, b) => a + b, 0);
    expect(records).toBe(n);
    const bytes = (await Promise.all(keys.map(memoryUsage))).reduce((a, b) => a + b, 0) / n;
    recordFigure(`redis_bytes_per_idempotency_record_of_${n}`, bytes, 'bytes', `${bound} (docs/api.md)`);
    expect(bytes).toBeLessThan(bound);
  });
});
