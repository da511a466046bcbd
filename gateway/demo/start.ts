#!/usr/bin/env node
// `npm start`: the gateway on its embedded default. Without REDIS_URL it runs a private
// redis-server (AOF on, data in ./var/redis, port EMBEDDED_REDIS_PORT or 6399), seeds the demo,
// serves the API, runs a bridge for the demo layout aimed at an OSC monitor that prints what it
// receives (DEMO_OSC_PORT or 9000), and prints a walk-through. With REDIS_URL it uses that Redis.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startMonitor } from '../../bridge/monitor.js';
import { startGateway } from '../app.js';
import { ConfigError, loadConfig } from '../config.js';
import { startRedisServer, type RedisServer } from '../dev/redis-server.js';
import { createLogger } from '../log.js';
import { connectToolRedis, redactUrl } from '../store/redis.js';
import { createStores } from '../store/stores.js';
import { DEMO_ADMIN_EMAIL, seedDemo } from './seed.js';
import { walkthrough } from './walkthrough.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

let embedded: RedisServer | undefined;
let bridge: ChildProcess | undefined;

/** The real audience-bridge process for the demo layout; resolves once it runs. Its warnings go to stderr. */
async function startDemoBridge(redisUrl: string, prefix: string, layoutId: string, target: string): Promise<ChildProcess> {
  const opsPort = process.env.DEMO_BRIDGE_OPS_PORT ?? '9465';
  const child = spawn(process.execPath, [join(ROOT, 'dist/bridge/main.js'), '--layout', layoutId, '--target', target, '--redis', redisUrl, '--bridge-id', 'demo-bridge', '--ops-port', opsPort], {
    env: { ...process.env, REDIS_PREFIX: prefix, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the demo bridge exited with code ${code}`)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.includes('audience-bridge running')) resolve();
      else if (/"level":(4|5|6)0/.test(line)) process.stderr.write(`${line}\n`);
    });
  });
  return child;
}

async function main(): Promise<void> {
  let redisUrl = process.env.REDIS_URL;
  let redisNote = 'from REDIS_URL';
  if (!redisUrl) {
    // Installs Debian's redis-server when missing (as root), else says what to install.
    execFileSync('bash', [join(ROOT, 'scripts/ensure-system-packages.sh'), 'start'], { stdio: 'inherit' });
    const dir = resolve(process.env.AUDIENCE_VAR_DIR ?? join(ROOT, 'var'), 'redis');
    const port = Number(process.env.EMBEDDED_REDIS_PORT ?? 6399);
    embedded = await startRedisServer({ dir, port }).catch((e: Error) => {
      throw new Error(`${e.message}; is port ${port} taken (an earlier demo Redis: redis-cli -p ${port} shutdown)? EMBEDDED_REDIS_PORT picks another`);
    });
    redisUrl = embedded.url;
    redisNote = `embedded, AOF in ${dir}`;
  }
  const config = loadConfig({ ...process.env, REDIS_URL: redisUrl });
  const log = createLogger('audience-gateway', config.logLevel);

  const admin = await connectToolRedis(config.redisUrl);
  const seed = await seedDemo(createStores(admin, config.redisPrefix));
  admin.disconnect();

  const gateway = await startGateway(config, { log });
  const api = `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${gateway.port}`;
  const monitor = await startMonitor(Number(process.env.DEMO_OSC_PORT ?? 9000), '127.0.0.1', (line) => process.stdout.write(`${line}\n`)).catch((e: Error) => {
    throw new Error(`cannot listen for OSC on port ${process.env.DEMO_OSC_PORT ?? 9000} (${e.message}); DEMO_OSC_PORT picks another`);
  });
  const osc = `127.0.0.1:${monitor.port}`;
  bridge = await startDemoBridge(config.redisUrl, config.redisPrefix, seed.layoutId, osc);
  process.stdout.write(walkthrough({ api, redisUrl: redactUrl(config.redisUrl), redisNote, apiKey: seed.apiKey, layoutId: seed.layoutId, teamId: seed.teamId, osc, adminEmail: DEMO_ADMIN_EMAIL, adminPassword: seed.adminPassword }));

  const stop = async () => {
    if (bridge && bridge.exitCode === null) {
      const exited = new Promise((r) => bridge!.once('exit', r));
      bridge.kill('SIGTERM');
      await exited;
    }
    monitor.close();
    await gateway.close();
    await embedded?.stop();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
}

main().catch(async (e: unknown) => {
  process.stderr.write(`npm start: ${e instanceof ConfigError || e instanceof Error ? e.message : String(e)}\n`);
  bridge?.kill('SIGTERM');
  await embedded?.stop();
  process.exit(1);
});
