#!/usr/bin/env -S node --initial-heap-size=96 --single-threaded-gc
// audience-bridge: reads layouts' action streams and sends them as timed OSC/UDP to the displays.
// Wiring only: flags -> config -> bridge -> signals. See the README's "Bridge" section.
import { tlsVerificationOff } from '../runtime/redis-tls.js';
import { Command, CommanderError } from 'commander';
import { startBridge } from './app.js';
import { BridgeConfigError, bridgeRedisTarget, loadBridgeConfig, type BridgeFlags } from './config.js';
import { createLogger } from '../runtime/log.js';
import { tlsHandshakeProblem } from '../runtime/redis.js';
import { settledWithin, stopSignal } from '../runtime/signals.js';

/** How long a start that a stop signal interrupted may still take before the process exits anyway. */
const START_GRACE_MS = 3000;

const program = new Command('audience-bridge')
  .description('Send audience actions from Redis streams to displays as timed OSC over UDP.')
  .option('--config <file>', 'JSON configuration (schemas/bridge-config.schema.json): several layouts with their targets and options')
  .option('--layout <id>', 'serve one layout (with --target)')
  .option('--target <host:port>', 'a display to send to (repeatable)', (v: string, prev: string[] = []) => [...prev, v])
  .option('--redis <url>', 'Redis URL (default REDIS_URL, else redis://127.0.0.1:6379)')
  .option('--redis-cluster-nodes <nodes>', 'Redis Cluster seed nodes, comma-separated host:port (default REDIS_CLUSTER_NODES)')
  .option('--bridge-id <id>', 'stable name of this bridge (default: the hostname)')
  .option('--tick-hz <n>', 'send ticks per second (default 100)')
  .option('--playout-delay-ms <n>', 'bundle timetag = gateway receive time + this (default 0: immediately)')
  .option('--max-age-ms <n>', 'drop actions older than this (default 2000)')
  .option('--ops-port <n>', 'port of /metrics, /healthz, /readyz (default 9465; 0 picks a free one)')
  .option('--send-cpu <n>', 'run the event loop and the tick clock on this CPU only, the other threads on the rest (default: none)')
  .option('--osc-query-port <n>', 'serve the OSCQuery namespace of the layouts on this port (default: none; 0 picks a free one)')
  .option('--booleans <mode>', 'Toggle encoding for --target: int (1/0) or TF (OSC T/F) (default int)')
  .option('--check-config', 'validate the configuration and exit')
  .exitOverride();

async function main(): Promise<number> {
  try {
    program.parse(process.argv);
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : 2;
    throw e;
  }
  const flags = program.opts<BridgeFlags & { checkConfig?: boolean }>();
  let config;
  try {
    config = loadBridgeConfig(flags);
  } catch (e) {
    if (e instanceof BridgeConfigError) {
      process.stderr.write(`audience-bridge: invalid configuration: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  if (flags.checkConfig) {
    // TLS to Redis: one handshake shows whether the certificates are the right ones
    const tls = await tlsHandshakeProblem(bridgeRedisTarget(config));
    if (tls) {
      process.stderr.write(`audience-bridge: invalid configuration: ${tls}\n`);
      return 2;
    }
    const warning = tlsVerificationOff();
    if (warning) process.stderr.write(`audience-bridge: warning: ${warning}\n`);
    process.stdout.write(`audience-bridge: configuration OK (${config.layouts.length} layout(s), bridge id ${config.bridgeId})${warning ? ', with 1 warning' : ''}\n`);
    return 0;
  }
  const log = createLogger('audience-bridge', config.logLevel);
  // Before it starts: a SIGTERM that comes just after READY=1 still stops it gracefully, and one that
  // comes while it still waits for Redis gives the start START_GRACE_MS to finish before it exits.
  // A start that fails, before or after the signal, exits 1 with its message (below main).
  const stop = stopSignal();
  const starting = startBridge(config, { log, prioritiseSendPath: true });
  void stop.then((signal) => log.info({ signal }, 'stopping'));
  const bridge = await Promise.race([starting, stop.then(() => settledWithin(starting, START_GRACE_MS))]);
  await stop;
  await bridge?.stop().catch((e: unknown) => log.error({ err: e }, 'error while stopping'));
  return 0;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`audience-bridge: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  },
);
