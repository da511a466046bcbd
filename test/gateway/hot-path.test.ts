// The /action hot path's promises about Redis: one XADD per accepted action and nothing else,
// and streams trimmed to about STREAM_MAXLEN.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken, postAction, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
let t: TestGateway;
let token: string;

beforeAll(async () => {
  // no periodic re-check during the test: its reads would muddy the count
  t = await startTestGateway({ redisUrl: redis.get().server.url, overrides: { cacheRecheckMs: 300_000, streamMaxLen: 100 } });
  token = await mintToken(t, t.layoutId, t.apiKey);
});
afterAll(() => t.close());

async function commandCalls(): Promise<Map<string, number>> {
  const info = await redis.get().client.info('commandstats');
  return new Map([...info.matchAll(/^cmdstat_([a-z|]+):calls=(\d+)/gm)].map((m) => [m[1]!, Number(m[2])]));
}

describe('the /action hot path', () => {
  it('makes exactly one Redis call per accepted action, its XADD', async () => {
    await postAction(t, token, { layoutId: t.layoutId, lid: 1, type: 'Button' }); // warm: token and layout now cached
    const before = await commandCalls();
    for (let i = 0; i < 25; i++) expect((await postAction(t, token, { layoutId: t.layoutId, lid: 2, type: 'Slider', value: i / 25 })).status).toBe(200);
    const after = await commandCalls();
    const delta = [...after].map(([cmd, n]) => [cmd, n - (before.get(cmd) ?? 0)] as const).filter(([, d]) => d > 0);
    // the test's own INFO call is the only other command
    expect(Object.fromEntries(delta)).toEqual({ xadd: 25, info: 1 });
  });

  it('trims each stream to about STREAM_MAXLEN entries', async () => {
    for (let i = 0; i < 400; i++) await postAction(t, token, { layoutId: t.layoutId, lid: 1, type: 'Button' });
    const len = await redis.get().client.xlen(`${t.config.redisPrefix}layout:{${t.layoutId}}:actions`);
    expect(len).toBeGreaterThanOrEqual(100);
    expect(len).toBeLessThan(300); // approximate trimming removes whole stream nodes (100 entries each by default)
  });
});
