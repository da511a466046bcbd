#!/usr/bin/env node
// `npm start`: the gateway on its embedded default. Without REDIS_URL it runs a private
// redis-server (AOF on, data in ./var/redis, port EMBEDDED_REDIS_PORT or 6399), seeds the demo,
// serves the API and prints a walk-through. With REDIS_URL it uses that Redis instead.
import { execFileSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startGateway } from '../app.js';
import { ConfigError, loadConfig } from '../config.js';
import { startRedisServer, type RedisServer } from '../dev/redis-server.js';
import { createLogger } from '../log.js';
import { connectToolRedis, redactUrl } from '../store/redis.js';
import { createStores } from '../store/stores.js';
import { seedDemo } from './seed.js';
import { walkthrough } from './walkthrough.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

let embedded: RedisServer | undefined;

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
  process.stdout.write(walkthrough({ api, redisUrl: redactUrl(config.redisUrl), redisNote, apiKey: seed.apiKey, layoutId: seed.layoutId, teamId: seed.teamId }));

  const stop = async () => {
    await gateway.close();
    await embedded?.stop();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
}

main().catch(async (e: unknown) => {
  process.stderr.write(`npm start: ${e instanceof ConfigError || e instanceof Error ? e.message : String(e)}\n`);
  await embedded?.stop();
  process.exit(1);
});
