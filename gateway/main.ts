#!/usr/bin/env -S node --max-semi-space-size=8 --heap-growing-percent=25 --single-threaded-gc
// audience-gateway: the REST API process. Wiring only: config -> gateway (or, with GATEWAY_WORKERS
// above 1, a supervisor of that many gateway workers on one port) -> signals.
//   audience-gateway                 serve (settings from the environment; see the README)
//   audience-gateway --check-config  validate the settings and exit (systemd ExecStartPre)
//   audience-gateway --version       print its version and the Node it runs on, and exit
import { SystemdNotifier } from '../runtime/systemd.js';
import { startGateway } from './app.js';
import { ConfigError, loadConfig, redisTarget } from './config.js';
import { nativeUws } from './http/uws.js';
import { superviseWorkers } from './workers/supervisor.js';
import { endWithSupervisor, isWorker, serveSupervisor, workerCount } from './workers/worker.js';
import { createLogger } from '../runtime/log.js';
import { describeTarget, tlsHandshakeProblem } from '../runtime/redis.js';
import { tlsVerificationOff } from '../runtime/redis-tls.js';
import { KekError, loadKek } from './store/signing-kek.js';
import { stopSignal } from '../runtime/signals.js';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

async function main(argv: string[]): Promise<number> {
  if (argv.includes('--version')) {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    process.stdout.write(`audience-gateway ${version} (Node ${process.version})\n`);
    return 0;
  }
  let config;
  try {
    config = loadConfig();
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`audience-gateway: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  try {
    loadKek(config.signingKekFile); // missing, unreadable or malformed: a configuration error (exit 2); one that does not open the keys fails the start (exit 1)
  } catch (e) {
    if (!(e instanceof KekError)) throw e;
    process.stderr.write(`audience-gateway: invalid configuration: ${e.message}\n`);
    return 2;
  }
  if (argv.includes('--check-config')) {
    // TLS to Redis: one handshake shows whether the certificates are the right ones
    const tls = await tlsHandshakeProblem(redisTarget(config));
    if (tls) {
      process.stderr.write(`audience-gateway: invalid configuration: ${tls}\n`);
      return 2;
    }
    const warning = tlsVerificationOff();
    if (warning) process.stderr.write(`audience-gateway: warning: ${warning}\n`);
    process.stdout.write(`audience-gateway: configuration OK${warning ? ', with 1 warning' : ''}\n`);
    return 0;
  }
  nativeUws();
  const log = createLogger('audience-gateway', config.logLevel);
  const workers = workerCount(config.gatewayWorkers);
  if (workers > 1 && !isWorker()) {
    await superviseWorkers(config, workers, fileURLToPath(import.meta.url), log);
    return 0;
  }
  // Before it starts: a SIGTERM that comes while it starts, or just after READY=1, still drains.
  const stop = stopSignal();
  if (isWorker()) endWithSupervisor();
  const gateway = await startGateway(config, { log });
  log.info({ port: gateway.port, host: config.host, opsPort: gateway.opsPort, redis: describeTarget(redisTarget(config)), ...(isWorker() && { worker: Number(process.env.GATEWAY_WORKER_ID) }) }, 'audience-gateway listening');
  const stopServing = isWorker() ? serveSupervisor({ port: gateway.port, registry: gateway.deps.metrics.registry, ready: () => gateway.ready(), note: () => gateway.note() }) : () => {};
  // systemd (Type=notify): ready once listening; the watchdog ping proves the event loop turns.
  const systemd = new SystemdNotifier();
  const status = () => `STATUS=listening on ${config.host}:${gateway.port}${gateway.note() === null ? '' : `; ${gateway.note()}`}`;
  await systemd.notify('READY=1', status());
  // the STATUS line says so while the host's clock is far from Redis's
  let said = status();
  const statusTimer = isWorker() ? undefined : setInterval(() => status() !== said && void systemd.notify((said = status())), 5000);
  const watchdogMs = systemd.watchdogIntervalMs();
  const watchdog = watchdogMs ? setInterval(() => void systemd.notify('WATCHDOG=1'), watchdogMs) : undefined;
  log.info({ signal: await stop }, 'stopping: draining in-flight requests');
  clearInterval(watchdog);
  clearInterval(statusTimer);
  stopServing();
  // both awaited before exit: exiting first could lose STOPPING=1 (systemd-notify is a child process)
  await Promise.all([systemd.notify('STOPPING=1'), gateway.close()]).catch((e: unknown) => log.error({ err: e }, 'error while stopping'));
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`audience-gateway: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  },
);
