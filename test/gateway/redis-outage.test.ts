// Redis unreachable: /action answers 503 unavailable within 1 s (never 200, never a hang), and the
// gateway recovers by itself when Redis returns. Both a dead Redis and a black-holed one.
import { describe, expect, it } from 'vitest';
import { eventually, mintToken, postAction, startTestGateway, useGatewayWithToken } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

// appendfsync always, in memory: the action answered 200 before the kill is in the AOF whatever
// other programs do to the disk (with everysec, a busy disk's slow fsync can cost it: see
// test/faults/redis-slow-disk.test.ts)
const redis = useRedis(['--appendfsync', 'always'], '/dev/shm');

async function timed<T>(p: Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await p;
  return { value, ms: performance.now() - started };
}

describe('Redis killed', () => {
  const g = useGatewayWithToken(() => redis.get().server.url);

  it('answers 503 within 1 s while Redis is down and recovers by itself when it returns', async () => {
    const body = { layoutId: g.t.layoutId, lid: 2, type: 'Slider', value: 0.5 };
    expect((await postAction(g.t, g.token, body)).status).toBe(200);
    const streamKey = `${g.t.config.redisPrefix}layout:{${g.t.layoutId}}:actions`;
    const before = await redis.get().client.xlen(streamKey);

    await redis.get().server.kill();
    for (let i = 0; i < 5; i++) {
      const { value: r, ms } = await timed(postAction(g.t, g.token, body));
      expect(r.status).toBe(503);
      expect(r.body.error.code).toBe('unavailable');
      expect(ms).toBeLessThan(1000);
    }
    // API-key routes cannot confirm the key is not revoked: they fail closed with 503 too.
    const { value: layout, ms } = await timed(fetch(`${g.t.url}/layout/${g.t.layoutId}`, { headers: { 'x-api-key': g.t.apiKey } }));
    expect(layout.status).toBe(503);
    expect(ms).toBeLessThan(1000);

    await redis.get().server.restart();
    const back = performance.now();
    await eventually(async () => (await postAction(g.t, g.token, body)).status === 200);
    expect(performance.now() - back).toBeLessThan(2000);
    // only the actions that got a 200 are in the stream (AOF kept the earlier ones)
    await eventually(async () => (await redis.get().client.xlen(streamKey).catch(() => -1)) === before + 1);
  });
});

describe('Redis black-holed (connection up, no answers)', () => {
  it('answers 503 within 1 s and recovers when packets flow again', async () => {
    const proxy = new TcpProxy(redis.get().server.port);
    await proxy.start();
    const t = await startTestGateway({ redisUrl: `redis://127.0.0.1:${proxy.port}` });
    try {
      const token = await mintToken(t, t.layoutId, t.apiKey);
      const body = { layoutId: t.layoutId, lid: 1, type: 'Button' };
      expect((await postAction(t, token, body)).status).toBe(200);
      proxy.hold();
      const { value: r, ms } = await timed(postAction(t, token, body));
      expect(r.status).toBe(503);
      expect(ms).toBeLessThan(1000);
      proxy.release();
      await eventually(async () => (await postAction(t, token, body)).status === 200);
    } finally {
      await t.close();
      await proxy.stop();
    }
  });
});
