// A subscriber connection lost and made again: the Redis client subscribes again to what it
// listened to, and that SUBSCRIBE can fail (the connection lost once more, or refused: NOPERM after
// an ACL change). The failure is the client's error event, counted and logged; it is never an
// unhandled rejection, which would end the gateway (Node's default) and drop every phone on it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopProcess } from '../helpers/bridge.js';
import { spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { eventually, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
let seeded: TestGateway;
let gw: GatewayProcess | undefined;
beforeAll(async () => {
  seeded = await startTestGateway({ redisUrl: redis.get().server.url });
});
afterAll(async () => {
  if (gw) await stopProcess(gw.child, 'SIGKILL');
  await redis.get().client.call('ACL', 'SETUSER', 'default', '+subscribe');
  await seeded?.close();
});

describe('a subscriber whose SUBSCRIBE is refused when it connects again', () => {
  it('keeps the gateway serving: the refusal is logged, not an unhandled rejection that ends the process', async () => {
    gw = await spawnGateway({ REDIS_URL: redis.get().server.url, REDIS_PREFIX: seeded.config.redisPrefix });
    const c = redis.get().client;
    await c.call('ACL', 'SETUSER', 'default', '-subscribe');
    // the gateway's pub/sub connections are cut: they connect again and subscribe again, refused
    expect(Number(await c.call('CLIENT', 'KILL', 'TYPE', 'pubsub'))).toBeGreaterThan(0);
    await eventually(() => /refused the subscription made again after a reconnect.*NOPERM|NOPERM.*refused the subscription made again/.test(gw!.output()), 10_000);
    await new Promise((r) => setTimeout(r, 500)); // an unhandled rejection ends the process within a turn or two
    expect(gw.child.exitCode, gw.output().slice(-2000)).toBeNull();
    expect(gw.output()).not.toMatch(/unhandled|UnhandledPromiseRejection/i);
    expect((await fetch(`http://127.0.0.1:${gw.opsPort}/healthz`)).status).toBe(200);
    // once SUBSCRIBE is allowed again, the next connection made again subscribes again: both
    // gateways (this one and the test's own, in this process) listen to the invalidations again
    await c.call('ACL', 'SETUSER', 'default', '+subscribe');
    await eventually(async () => ((await c.call('PUBSUB', 'NUMSUB', `${seeded.config.redisPrefix}invalidate`)) as [string, number])[1] === 2, 10_000);
  });
});
