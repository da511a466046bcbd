// The real audience-gateway process (dist/gateway/main.js), as systemd or a shell runs it.
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { request } from 'node:http';
import { fileURLToPath } from 'node:url';
import { BENCH_LIMITS } from '../../bench/limits.js';
import { Redis } from 'ioredis';
import { freePort } from '../../dev/redis-server.js';
import { createStores } from '../../gateway/store/stores.js';
import { testKekFile } from './gateway.js';
import { randomPrefix } from './redis.js';
import type { LayoutDefinition } from '../../schemas/types.js';

export const GATEWAY_BIN = fileURLToPath(new URL('../../dist/gateway/main.js', import.meta.url));

/** The limits far above what tests send (the bench's: as UNLIMITED in gateway.ts); a test of the limits passes its own. */
export const UNLIMITED_ENV = BENCH_LIMITS;

/** POST /action on a connection of its own (so the kernel picks a process of the port for each); 0 when the connection failed. */
export function postOnNewConnection(port: number, token: string, body: unknown): Promise<number> {
  return new Promise((resolve) => {
    const data = JSON.stringify(body);
    const req = request({ host: '127.0.0.1', port, path: '/action', method: 'POST', agent: false, headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'content-length': Buffer.byteLength(data) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0)); // reset by a process that died: not accepted
    req.end(data);
  });
}

export interface GatewayProcess {
  child: ChildProcess;
  url: string;
  port: number;
  opsPort: number;
  output: () => string;
}

/** The gateway's process on the tests' defaults overridden by `env`, listening on `port`, not waited for (spawnGateway waits until it listens). */
export function gatewayChild(env: Record<string, string>, port: number, stdio: StdioOptions = 'pipe'): ChildProcess {
  return spawn(process.execPath, [GATEWAY_BIN], { env: { PATH: process.env.PATH ?? '', OPS_PORT: '0', LOG_LEVEL: 'info', LIVE_DRAIN_MS: '1000', SIGNING_KEK_FILE: testKekFile(), ...UNLIMITED_ENV, ...env, PORT: String(port) }, stdio });
}

/**
 * Starts the gateway with `env` (REDIS_URL or REDIS_CLUSTER_NODES, REDIS_PREFIX...) on a free port;
 * resolves once it listens. If it does not within `timeoutMs`, it is killed and the promise rejects.
 */
export async function spawnGateway(env: Record<string, string>, timeoutMs = 15_000): Promise<GatewayProcess> {
  const port = env.PORT ? Number(env.PORT) : await freePort();
  const child = gatewayChild(env, port);
  const stdout = child.stdout!;
  let out = '';
  stdout.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const opsPort = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`audience-gateway did not listen within ${timeoutMs} ms: ${out}`));
    }, timeoutMs);
    stdout.on('data', () => {
      // with GATEWAY_WORKERS above 1, the supervisor's line (its ops port serves all workers)
      const m = (Number(env.GATEWAY_WORKERS ?? 1) > 1 ? /"opsPort":(\d+).*audience-gateway workers listening/ : /"opsPort":(\d+).*audience-gateway listening/).exec(out);
      if (!m) return;
      clearTimeout(timer);
      resolve(Number(m[1]));
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`audience-gateway exited with ${code}: ${out}`));
    });
  });
  return { child, url: `http://127.0.0.1:${port}`, port, opsPort, output: () => out };
}

/**
 * A team with `layout` (and `more` layouts) imported and an API key, on `redisUrl` under `prefix`,
 * for gateway processes spawned on that data; `admin` stays open for the test's own reads
 * (disconnect it after).
 */
export async function seedLayout(redisUrl: string, prefix: string, layout: LayoutDefinition, ...more: LayoutDefinition[]): Promise<{ apiKey: string; teamId: string; admin: Redis }> {
  const admin = new Redis(redisUrl);
  const stores = createStores(admin, prefix);
  const team = await stores.teams.create('Spawned gateways');
  for (const l of [layout, ...more]) await stores.layouts.import(team.teamId, l);
  return { apiKey: (await stores.apiKeys.create(team.teamId, { name: 'backend' })).apiKey, teamId: team.teamId, admin };
}

/** A gateway process on its own prefix of `redisUrl`, serving `layout` with one API key. */
export async function gatewayWithLayout(redisUrl: string, layout: LayoutDefinition): Promise<{ gateway: GatewayProcess; apiKey: string; prefix: string }> {
  const prefix = randomPrefix();
  const seeded = await seedLayout(redisUrl, prefix, layout);
  seeded.admin.disconnect();
  return { gateway: await spawnGateway({ REDIS_URL: redisUrl, REDIS_PREFIX: prefix }), apiKey: seeded.apiKey, prefix };
}
