// TLS verification turned off from the environment (NODE_TLS_REJECT_UNAUTHORIZED=0) is never
// silent: a real gateway process says so in --check-config, in its log at start and in /readyz for
// as long as it runs, and the bridge in its --check-config and /readyz; without it, none of them
// mention it.
import { execFile } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { GATEWAY_BIN, spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { testKekFile } from '../helpers/gateway.js';
import { configFile, runBridge, spawnBridge, stopProcess } from '../helpers/bridge.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';

const redis = useRedis();
let running: GatewayProcess | null = null;
afterEach(async () => {
  if (running) await stopProcess(running.child);
  running = null;
});

const checkConfig = (env: Record<string, string>) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(process.execPath, [GATEWAY_BIN, '--check-config'], { env: { PATH: process.env.PATH ?? '', REDIS_URL: redis.get().server.url, SIGNING_KEK_FILE: testKekFile(), ...env }, timeout: 10_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
const readyz = async (g: GatewayProcess) => (await fetch(`http://127.0.0.1:${g.opsPort}/readyz`)).text();

describe('NODE_TLS_REJECT_UNAUTHORIZED=0', () => {
  it('is warned of by --check-config, by the log at start and by /readyz', async () => {
    const off = await checkConfig({ NODE_TLS_REJECT_UNAUTHORIZED: '0' });
    expect(off.code).toBe(0);
    expect(off.stderr).toMatch(/warning: NODE_TLS_REJECT_UNAUTHORIZED=0/);
    expect(off.stdout).toMatch(/configuration OK, with 1 warning/);
    running = await spawnGateway({ REDIS_URL: redis.get().server.url, REDIS_PREFIX: randomPrefix(), NODE_TLS_REJECT_UNAUTHORIZED: '0' });
    expect(running.output()).toMatch(/"level":40.*NODE_TLS_REJECT_UNAUTHORIZED=0/);
    const body = await readyz(running);
    expect(body).toMatch(/^ready; note: .*NODE_TLS_REJECT_UNAUTHORIZED=0: TLS certificates are not verified/);
  });

  it('is not mentioned when verification is on', async () => {
    const on = await checkConfig({});
    expect([on.code, on.stderr, on.stdout]).toEqual([0, '', 'audience-gateway: configuration OK\n']);
    running = await spawnGateway({ REDIS_URL: redis.get().server.url, REDIS_PREFIX: randomPrefix() });
    expect(await readyz(running)).toBe('ready\n');
    expect(running.output()).not.toMatch(/NODE_TLS_REJECT_UNAUTHORIZED/);
  });

  it('is warned of by the bridge\'s --check-config and /readyz', async () => {
    const file = configFile({ redisUrl: redis.get().server.url, prefix: randomPrefix(), layouts: [{ layoutId: 'tls-env', targets: [{ host: '127.0.0.1', port: 9 }] }] });
    const off = await runBridge(['--config', file, '--check-config'], { NODE_TLS_REJECT_UNAUTHORIZED: '0' });
    expect([off.code, off.stderr]).toEqual([0, expect.stringMatching(/warning: NODE_TLS_REJECT_UNAUTHORIZED=0/)]);
    expect(off.stdout).toMatch(/configuration OK .*, with 1 warning/);
    const on = await runBridge(['--config', file, '--check-config']);
    expect([on.code, on.stderr]).toEqual([0, '']);
    const bridge = await spawnBridge(['--config', file], { NODE_TLS_REJECT_UNAUTHORIZED: '0' });
    try {
      const opsPort = Number(/"opsPort":(\d+)/.exec(bridge.output())?.[1]);
      const body = await (await fetch(`http://127.0.0.1:${opsPort}/readyz`)).text();
      expect(body).toMatch(/NODE_TLS_REJECT_UNAUTHORIZED=0: TLS certificates are not verified/);
    } finally {
      await stopProcess(bridge.child);
    }
  });
});
