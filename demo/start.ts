#!/usr/bin/env node
// `npm start`: the gateway on its embedded default. Without REDIS_URL it runs a private
// redis-server (AOF on, data in ./var/redis, port EMBEDDED_REDIS_PORT or 6399), seeds the demo,
// serves the API, runs a bridge for the demo layout aimed at an OSC monitor that prints what it
// receives (DEMO_OSC_PORT or 9000), and prints a walk-through. With REDIS_URL it uses that Redis.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startGateway } from '../gateway/app.js';
import { ConfigError, loadConfig, redisTarget } from '../gateway/config.js';
import { describeTaken, takenPorts, type PortNeed } from '../dev/ports.js';
import { startRedisServer, type RedisServer } from '../dev/redis-server.js';
import { createLogger } from '../runtime/log.js';
import { parseClusterNodes } from '../runtime/redis.js';
import { settledWithin, stopSignal } from '../runtime/signals.js';
import { connectToolRedis, redactUrl } from '../gateway/store/redis.js';
import { ensureKekFile, loadKek } from '../gateway/store/signing-kek.js';
import { createStores } from '../gateway/store/stores.js';
import { DEMO_ADMIN_EMAIL, seedDemo } from './seed.js';
import { walkthrough } from './walkthrough.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** Where the demo keeps its data: the embedded Redis's files, and demo.json (its key and password). */
const varDir = () => resolve(process.env.AUDIENCE_VAR_DIR ?? join(ROOT, 'var'));
/** What the demo started, as Ctrl-C reports it stopped. */
const startedParts: string[] = [];

let embedded: RedisServer | undefined;
/** Once a stop began (Ctrl-C reaches the whole group: Redis and the bridge stop too), their warnings are expected, not news. */
let stopping = false;
let bridge: ChildProcess | undefined;
let monitor: ChildProcess | undefined;
let gateway: Awaited<ReturnType<typeof startGateway>> | undefined;

/** The OSC monitor (the bridge package's audience-osc-monitor) as a process: its lines go to our stdout. Resolves with its port. */
async function startDemoMonitor(port: number): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, [join(ROOT, 'dist/bridge/monitor.js'), '--port', String(port)], { stdio: ['ignore', 'inherit', 'pipe'] });
  const bound = await new Promise<number>((resolve, reject) => {
    let err = '';
    child.once('exit', (code) => reject(new Error(`cannot listen for OSC on port ${port} (${err.trim() || `exit ${code}`}); DEMO_OSC_PORT picks another`)));
    createInterface({ input: child.stderr }).on('line', (line) => {
      const m = /listening on .*:(\d+)$/.exec(line);
      if (m) resolve(Number(m[1]));
      else err += `${line}\n`;
    });
  });
  return { child, port: bound };
}

/** SIGTERM and wait for the exit. */
async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

/**
 * The Node flags a built program's shebang gives it (`#!/usr/bin/env -S node --flag ...`): the demo
 * runs the bridge as its shebang and its unit do, with its V8 flags (bridge/node-flags.ts).
 */
function shebangFlags(file: string): string[] {
  return (readFileSync(file, 'utf8').split('\n', 1)[0] ?? '').split(/\s+/).filter((word) => word.startsWith('--'));
}

/** The real audience-bridge process for the demo layout; resolves once it runs. Its warnings go to stderr. */
async function startDemoBridge(redisUrl: string, prefix: string, layoutId: string, target: string): Promise<ChildProcess> {
  const opsPort = process.env.DEMO_BRIDGE_OPS_PORT ?? '9465';
  const main = join(ROOT, 'dist/bridge/main.js');
  const child = spawn(process.execPath, [...shebangFlags(main), main, '--layout', layoutId, '--target', target, '--redis', redisUrl, '--bridge-id', 'demo-bridge', '--ops-port', opsPort], {
    env: { ...process.env, REDIS_PREFIX: prefix, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the demo bridge exited with code ${code}`)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.includes('audience-bridge running')) resolve();
      else if (!stopping && /"level":(4|5|6)0/.test(line)) process.stderr.write(`${line}\n`);
    });
  });
  return child;
}

/**
 * Every port the demo will take, checked before anything starts, so one message names each taken
 * port with the variable that moves it (and no other demo's Redis is ever taken for ours).
 */
async function checkPorts(embeddedRedisPort: number | null): Promise<void> {
  const config = loadConfig({ ...process.env, REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' });
  const needs: PortNeed[] = [
    { variable: 'PORT', host: config.host, port: config.port, protocol: 'tcp' },
    { variable: 'OPS_PORT', host: config.opsHost, port: config.opsPort, protocol: 'tcp' },
    { variable: 'DEMO_OSC_PORT', host: '127.0.0.1', port: Number(process.env.DEMO_OSC_PORT ?? 9000), protocol: 'udp' },
    { variable: 'DEMO_BRIDGE_OPS_PORT', host: '127.0.0.1', port: Number(process.env.DEMO_BRIDGE_OPS_PORT ?? 9465), protocol: 'tcp' },
    ...(embeddedRedisPort === null ? [] : [{ variable: 'EMBEDDED_REDIS_PORT', host: '127.0.0.1', port: embeddedRedisPort, protocol: 'tcp' as const }]),
  ];
  const taken = await takenPorts(needs);
  if (taken.length > 0) throw new Error(describeTaken(taken, 'npm start'));
}

async function main(): Promise<void> {
  let redisUrl = process.env.REDIS_URL;
  let redisNote = 'from REDIS_URL';
  const clusterNodes = parseClusterNodes(process.env.REDIS_CLUSTER_NODES);
  const embeddedPort = clusterNodes || redisUrl ? null : Number(process.env.EMBEDDED_REDIS_PORT ?? 6399);
  await checkPorts(embeddedPort);
  if (clusterNodes) redisNote = 'Redis Cluster, from REDIS_CLUSTER_NODES';
  else if (!redisUrl) {
    // Installs Debian's redis-server when missing (as root), else says what to install.
    execFileSync('bash', [join(ROOT, 'scripts/ensure-system-packages.sh'), 'start'], { stdio: 'inherit' });
    const dir = resolve(varDir(), 'redis');
    const port = embeddedPort!;
    embedded = await startRedisServer({ dir, port }).catch((e: Error) => {
      throw new Error(`${e.message}; EMBEDDED_REDIS_PORT picks another port for this demo's own Redis`);
    });
    redisUrl = embedded.url;
    redisNote = `embedded, AOF in ${dir}`;
    startedParts.push(`the embedded Redis (${embedded.url}; its data stays in ${dir})`);
  }
  // the demo's own key-encryption key for the signing secrets, kept beside its data
  const signingKekFile = process.env.SIGNING_KEK_FILE || ensureKekFile(join(varDir(), 'signing-kek'));
  const config = loadConfig({ ...process.env, REDIS_URL: redisUrl, SIGNING_KEK_FILE: signingKekFile });
  const log = createLogger('audience-gateway', config.logLevel);

  const target = redisTarget(config);
  const admin = await connectToolRedis(target);
  const redisShown = clusterNodes ? clusterNodes.map(redactUrl).join(',') : redactUrl(config.redisUrl);
  const seed = await seedDemo(createStores(admin, config.redisPrefix, loadKek(signingKekFile)), join(varDir(), 'demo.json'), `${redisShown} ${config.redisPrefix}`);
  admin.disconnect();

  gateway = await startGateway(config, { log });
  const api = `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${gateway.port}`;
  startedParts.unshift(`the gateway (${api})`);
  const started = await startDemoMonitor(Number(process.env.DEMO_OSC_PORT ?? 9000));
  monitor = started.child;
  const osc = `127.0.0.1:${started.port}`;
  startedParts.push(`the OSC monitor (${osc})`);
  bridge = await startDemoBridge(config.redisUrl, config.redisPrefix, seed.layoutId, osc);
  startedParts.push('the demo bridge');
  const seedNode = clusterNodes ? new URL(clusterNodes[0]!.includes('://') ? clusterNodes[0]! : `redis://${clusterNodes[0]!}`) : null;
  const redis = clusterNodes
    ? { redisShown: clusterNodes.map(redactUrl).join(','), redisEnv: `REDIS_CLUSTER_NODES=${clusterNodes.map(redactUrl).join(',')}`, redisCli: `-c -h ${seedNode!.hostname} -p ${seedNode!.port || 6379}` }
    : { redisShown, redisEnv: `REDIS_URL=${redactUrl(config.redisUrl)}`, redisCli: `-u ${redactUrl(config.redisUrl)}` };
  // an audience token for the page a newcomer opens in a browser, minted as a backend would
  const minted = await fetch(`${api}/token`, { method: 'POST', headers: { 'x-api-key': seed.apiKey, 'content-type': 'application/json' }, body: JSON.stringify({ layoutId: seed.layoutId }) });
  const { token } = (await minted.json()) as { token: string };
  if (stopping) return; // Ctrl-C came during the start
  process.stdout.write(walkthrough({ api, ...redis, redisNote, apiKey: seed.apiKey, layoutId: seed.layoutId, teamId: seed.teamId, osc, adminEmail: DEMO_ADMIN_EMAIL, adminPassword: seed.adminPassword, cli: fileURLToPath(new URL('../gateway/cli/main.js', import.meta.url)), play: `${api}/play/#token=${token}`, tokenHours: config.tokenTtlSeconds / 3600, reused: seed.reused, loadtest: join(ROOT, 'dist/loadtest/main.js'), crowdScenario: join(ROOT, 'bench/scenarios/demo-crowd.json') }));

}

/** Stops what started, the gateway first: it then knows that the Redis it loses is no surprise. */
async function teardown(): Promise<void> {
  const closed = gateway?.close();
  await stopChild(bridge);
  await stopChild(monitor);
  await closed;
  await embedded?.stop();
}

const stop = stopSignal(); // before anything starts
/** Settles once the start is over: done, or failed and (unless a stop caused it) reported. */
const startup = main().catch(async (e: unknown) => {
  if (stopping) return; // a Ctrl-C during the start (Redis and the bridge got it too): the stop below ends the process
  const message = e instanceof ConfigError || e instanceof Error ? e.message : String(e);
  process.stderr.write(`npm start: ${message}\n`);
  await teardown();
  process.exit(1);
});

/**
 * Ctrl-C or SIGTERM, at any time from the first line on: the step under way may finish (up to
 * 3 s) so that what it started is stopped too, then everything stops and the exit code is 0.
 * The handlers are in place before the walk-through says "Stop with Ctrl-C".
 */
void stop.then(async () => {
  stopping = true;
  await settledWithin(startup, 3000);
  await teardown();
  process.stdout.write(startedParts.length > 0 ? `\nStopped ${startedParts.join(', ')}.\n` : '\nStopped before anything started.\n');
  process.exit(0);
});
