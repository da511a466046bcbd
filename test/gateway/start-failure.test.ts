// A gateway whose start fails part-way leaves nothing running: here its ops port is taken, the last
// step of the start, so every step before it (the Redis connections, the caches' subscriber, the
// crowd's subscribers, the HTTP server) has started, and each is stopped before startGateway rejects.
import { createServer, type Server } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
let taken: Server;
let port = 0;

beforeAll(async () => {
  taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  port = (taken.address() as { port: number }).port;
});
afterAll(() => new Promise<void>((resolve) => taken.close(() => resolve())));

/** The names of the clients connected to the test's Redis now. */
async function clientNames(): Promise<string[]> {
  const r = new Redis(redis.get().server.url);
  try {
    const list = (await r.client('LIST')) as string;
    return [...list.matchAll(/ name=(\S*)/g)].map((m) => m[1]!).filter((n) => n !== '');
  } finally {
    r.disconnect();
  }
}

describe('a gateway whose start fails', () => {
  it('rejects with the reason, and leaves no Redis connection of its own behind', async () => {
    await expect(startTestGateway({ redisUrl: redis.get().server.url, overrides: { opsHost: '127.0.0.1', opsPort: port } })).rejects.toThrow(`cannot listen on 127.0.0.1:${port} for /metrics`);
    await expect.poll(async () => (await clientNames()).filter((n) => n.startsWith('audience-gateway'))).toEqual([]);
  });
});
