// A real redis-server per test file, on a free port, with its data in a temp directory.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { startRedisServer, type RedisServer } from '../../dev/redis-server.js';

export interface TestRedis {
  server: RedisServer;
  /** a plain client for assertions and setup */
  client: Redis;
}

/**
 * Starts redis-server before the file's tests and stops it after: with `extraArgs` (e.g.
 * `--appendfsync always`), its data in a new directory under `parent` (`/dev/shm`: memory, where an
 * fsync waits for no disk).
 */
export function useRedis(extraArgs: string[] = [], parent = tmpdir()): { get: () => TestRedis } {
  let t: TestRedis | undefined;
  let dir = '';
  beforeAll(async () => {
    dir = mkdtempSync(join(parent, 'ac-redis-'));
    const server = await startRedisServer({ dir, extraArgs });
    t = { server, client: new Redis(server.url, { maxRetriesPerRequest: 1 }) };
    t.client.on('error', () => {}); // tests that kill Redis expect this client's errors
  });
  afterAll(async () => {
    t?.client.disconnect();
    await t?.server.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    get: () => {
      if (!t) throw new Error('redis not started');
      return t;
    },
  };
}

/**
 * Stops redis-server for `ms` (SIGSTOP, then SIGCONT), as a loaded machine can keep it off the CPU:
 * its clients wait and nothing is lost. It runs again whatever happens meanwhile.
 */
export async function stallRedis(server: RedisServer, ms: number): Promise<void> {
  process.kill(server.pid!, 'SIGSTOP');
  try {
    await new Promise((r) => setTimeout(r, ms));
  } finally {
    process.kill(server.pid!, 'SIGCONT');
  }
}

/** A fresh key prefix, so tests sharing one Redis never see each other's data. */
export function randomPrefix(): string {
  return `t${randomBytes(4).toString('hex')}:`;
}
