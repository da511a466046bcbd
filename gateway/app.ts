// Builds a running gateway from a configuration, in named steps (gateway/wiring/, one step a file):
// connect, migrate and seal, the caches, the services, the HTTP server, the live channel, listen,
// the ops server. Each step uses only the steps before it; what follows an earlier step's state
// (the live channel following the caches, the crowd feed and the claims) subscribes to it. close()
// stops the steps in the reverse order, and a start that fails stops the steps it had made.
// main.ts calls it for the real process; tests call it in-process with port 0.
import type { Logger } from '../runtime/log.js';
import { startOpsServer } from '../runtime/ops-server.js';
import type { GatewayConfig } from './config.js';
import { GatewayMetrics } from './metrics.js';
import type { RouteDeps } from './routes/deps.js';
import { loadKek } from './store/signing-kek.js';
import type { Stores } from './store/stores.js';
import { loadCaches } from './wiring/caches.js';
import { connect } from './wiring/connect.js';
import { httpServer, listen } from './wiring/http.js';
import { startLive } from './wiring/live.js';
import { startServices } from './wiring/services.js';
import { migrateAndSeal } from './wiring/stored-data.js';

/** How long a stopping gateway waits for in-flight requests to be answered. */
export const DRAIN_MS = 5000;

export interface Gateway {
  readonly port: number;
  /** port of /metrics, /healthz, /readyz */
  readonly opsPort: number;
  readonly stores: Stores;
  readonly deps: RouteDeps;
  /** Why the gateway is not ready (Redis does not answer), or null: what /readyz says. */
  ready(): Promise<string | null>;
  /** What /readyz adds to a 200: the host's clock far from Redis's, or null. */
  note(): string | null;
  /** Stop listening, answer what is in flight (at most drainMs), disconnect from Redis. */
  close(drainMs?: number): Promise<void>;
}

export interface GatewayOptions {
  log: Logger;
  now?: () => number;
}

/** A started step's stop; `stopping` is told to every step first, before any stops. */
interface Stop {
  stopping?(): void;
  stop(drainMs: number): void | Promise<void>;
}

/** The steps started so far: stopped in the reverse order of their start. */
class Started {
  private readonly stops: Stop[] = [];

  add(stop: Stop): void {
    this.stops.push(stop);
  }

  /** Stops every step, also past one whose stop throws; then throws the first such error. */
  async stopAll(drainMs: number): Promise<void> {
    const stops = this.stops.splice(0).reverse();
    for (const s of stops) s.stopping?.();
    let failed: { error: unknown } | null = null;
    for (const s of stops) {
      try {
        await s.stop(drainMs);
      } catch (e) {
        failed ??= { error: e };
      }
    }
    if (failed) throw failed.error;
  }
}

export async function startGateway(config: GatewayConfig, opts: GatewayOptions): Promise<Gateway> {
  const { log } = opts;
  const kek = loadKek(config.signingKekFile); // before any connection: a missing or unreadable one stops the start here
  const metrics = new GatewayMetrics();
  const started = new Started();
  try {
    const connections = await connect(config, log, metrics, opts.now);
    started.add(connections);
    const { stores, keyring } = await migrateAndSeal(connections.redis, config, kek, log);
    const caches = await loadCaches(connections, stores, keyring, config, metrics, log);
    started.add(caches);
    const services = startServices(connections, stores, caches, config, metrics, log);
    started.add(services);
    const server = httpServer(config, services, metrics, log, connections.now);
    const live = startLive(connections, stores, caches, services, server, config, metrics, log);
    started.add(live);
    const port = await listen(server, config);
    started.add({ stop: (drainMs) => server.close(drainMs) }); // stops listening first, then answers what is in flight
    const ready = () => services.writes.ready();
    /** what /readyz adds to a 200: each problem that does not stop this gateway serving, or null */
    const note = () => [services.writes.note(), ...connections.notes(), keyring.problem()].filter((n) => n !== null).join('; ') || null;
    const ops = await startOpsServer(config.opsHost, config.opsPort, metrics.registry, ready, note).catch((e: unknown) => {
      throw new Error(`cannot listen on ${config.opsHost}:${config.opsPort} for /metrics: ${(e as Error).message} (OPS_PORT and OPS_HOST choose others)`);
    });
    started.add({ stop: () => ops.close() });
    return { port, opsPort: ops.port, ready, note, stores, deps: services.deps, close: (drainMs = DRAIN_MS) => started.stopAll(drainMs) };
  } catch (e) {
    // no half-started gateway: what started stops, at once; the start's own error is the one thrown
    await started.stopAll(0).catch((stopError: unknown) => log.error({ err: stopError }, 'a step of a failed start did not stop cleanly'));
    throw e;
  }
}
