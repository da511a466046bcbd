// The audience-gateway process: configuration checks, refusing the slow uWS fallback, serving,
// and a graceful SIGTERM.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ConfigError, configProperties, loadConfig } from '../../gateway/config.js';
import { freePort } from '../../dev/redis-server.js';
import { glibcVersion } from '../../gateway/http/uws.js';
import { eventually, testKekFile } from '../helpers/gateway.js';
import { spawnGateway } from '../helpers/gateway-process.js';
import { startFakeNotifySocket } from '../helpers/notify-socket.js';
import { useRedis } from '../helpers/redis.js';

const BIN = fileURLToPath(new URL('../../dist/gateway/main.js', import.meta.url));
const redis = useRedis();

function runBin(env: Record<string, string>, args: string[] = []): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH ?? '', SIGNING_KEK_FILE: testKekFile(), OPS_PORT: '0', ...env }, timeout: 10_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('configuration', () => {
  it('has defaults for everything and freezes the result', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({ port: 8080, host: '127.0.0.1', tokenTtlSeconds: 86400, maxBodyBytes: 16384, corsOrigins: '*' });
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('reads environment variables with their types', () => {
    expect(loadConfig({ PORT: '9000', TOKEN_TTL_SECONDS: '600', CORS_ORIGINS: 'https://a.example' })).toMatchObject({ port: 9000, tokenTtlSeconds: 600, corsOrigins: 'https://a.example' });
  });

  it.each([
    [{ PORT: 'eighty' }, /port \(PORT\)/],
    [{ PORT: '70000' }, /port \(PORT\)/],
    [{ REDIS_URL: 'http://x' }, /redisUrl \(REDIS_URL\)/],
    [{ TOKEN_TTL_SECONDS: '5' }, /tokenTtlSeconds \(TOKEN_TTL_SECONDS\)/],
    [{ LOG_LEVEL: 'loud' }, /logLevel \(LOG_LEVEL\)/],
  ])('names the bad setting %j', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('refuses unknown settings', () => {
    expect(() => loadConfig({}, { colour: 'red' } as never)).toThrow(/colour is not a setting/);
  });

  it('declares an environment variable and a description for every setting', () => {
    for (const [key, p] of Object.entries(configProperties())) {
      expect(p['x-env'], key).toMatch(/^[A-Z_]+$/);
      expect(p.description.length, key).toBeGreaterThan(20);
      expect(p.default, key).toBeDefined();
    }
  });

  it('--check-config exits 0 for good settings and 2 naming a bad one', async () => {
    const good = await runBin({}, ['--check-config']);
    expect(good.code).toBe(0);
    const bad = await runBin({ PORT: 'x' }, ['--check-config']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('port (PORT)');
  });
});

describe('the process', () => {
  it('runs on uWebSockets.js’s native binary for this Node: the mapped file is uws_linux_x64_<ABI>.node', async () => {
    const gw = await spawnGateway({ REDIS_URL: redis.get().server.url, REDIS_PREFIX: 'maps:' });
    try {
      expect(readFileSync(`/proc/${gw.child.pid}/maps`, 'utf8')).toContain(`uws_linux_x64_${process.versions.modules}.node`);
    } finally {
      gw.child.kill('SIGKILL');
    }
  });

  it('refuses to start, saying why and what to do, where the native binary cannot load (Node 24 on glibc < 2.38)', async () => {
    const glibc = glibcVersion();
    if (!glibc || Number(glibc.split('.')[1]) >= 38) {
      // On a newer glibc Node 24 loads its binary; the refusal is then shown with a Node the build has no binary for.
      expect(glibc).toBeTruthy();
      return;
    }
    const node24 = execFileSync('bash', [fileURLToPath(new URL('../../scripts/node.sh', import.meta.url)), '24'], { encoding: 'utf8' }).trim();
    const r = await new Promise<{ code: number; stderr: string }>((resolve) =>
      execFile(node24, [BIN], { env: { PATH: process.env.PATH ?? '', SIGNING_KEK_FILE: testKekFile(), REDIS_URL: redis.get().server.url, PORT: '0', OPS_PORT: '0' }, timeout: 20_000 }, (err, _stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }),
      ),
    );
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/no working native binary for Node 24\.\d+\.\d+ \(ABI 137\) on linux-x64 with glibc 2\.\d+; refusing to start/);
    expect(r.stderr).toMatch(/Node 20 and 22 with glibc >= 2\.36, and on Node 24 with glibc >= 2\.38/);
  }, 120_000);

  it('exits non-zero with a clear message when Redis is unreachable at start', async () => {
    const r = await runBin({ REDIS_URL: 'redis://127.0.0.1:1', PORT: '0' });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/cannot reach Redis at redis:\/\/127\.0\.0\.1:1: .*ECONNREFUSED.*set REDIS_URL/);
  });

  it('says a taken port is in use and names the variable that moves it (PORT, OPS_PORT)', async () => {
    const { createServer } = await import('node:net');
    const busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    const taken = String((busy.address() as { port: number }).port);
    try {
      const api = await runBin({ REDIS_URL: redis.get().server.url, PORT: taken, OPS_PORT: '0' });
      expect(api.code).toBe(1);
      expect(api.stderr).toContain(`cannot listen on 127.0.0.1:${taken}: the port is in use`);
      expect(api.stderr).toMatch(/PORT and HOST choose others/);
      const ops = await runBin({ REDIS_URL: redis.get().server.url, PORT: '0', OPS_PORT: taken });
      expect(ops.code).toBe(1);
      expect(ops.stderr).toMatch(new RegExp(`cannot listen on 127\\.0\\.0\\.1:${taken} for /metrics: .*EADDRINUSE.*OPS_PORT`));
    } finally {
      busy.close();
    }
  });

  it('serves, then drains and exits 0 on SIGTERM', async () => {
    const port = await freePort();
    const child = spawn(process.execPath, [BIN], { env: { PATH: process.env.PATH ?? '', SIGNING_KEK_FILE: testKekFile(), REDIS_URL: redis.get().server.url, PORT: String(port), REDIS_PREFIX: 'proc:', OPS_PORT: '0' } });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    await eventually(() => out.includes('audience-gateway listening'), 10_000);
    expect(JSON.parse(out.split('\n')[0]!)).toMatchObject({ level: 30, port, msg: 'audience-gateway listening' });
    const r = await fetch(`http://127.0.0.1:${port}/layout/x`);
    expect(r.status).toBe(401);
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  // systemd may stop the unit the moment it is told READY=1; the drain must not depend on how soon.
  it('drains and exits 0 on a SIGTERM sent the moment it says it listens, READY=1 still on its way to systemd', async () => {
    const notify = await startFakeNotifySocket();
    try {
      const child = spawn(process.execPath, [BIN], { env: { PATH: process.env.PATH ?? '', SIGNING_KEK_FILE: testKekFile(), REDIS_URL: redis.get().server.url, PORT: '0', REDIS_PREFIX: 'proc:', OPS_PORT: '0', NOTIFY_SOCKET: notify.path } });
      let out = '';
      const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
      child.stdout.on('data', (d) => {
        out += d;
        if (out.includes('audience-gateway listening') && child.exitCode === null && !child.killed) child.kill('SIGTERM');
      });
      expect(await exited, out).toEqual({ code: 0, signal: null });
      expect(out).toContain('stopping: draining in-flight requests');
    } finally {
      notify.child.kill('SIGKILL');
    }
  });
});
