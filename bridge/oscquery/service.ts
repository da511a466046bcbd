// OSCQuery for a running bridge: reads its layouts' definitions from Redis (read-only, the
// `layoutKey` hash: HGET version every POLL_MS, the pages again only when it changed), builds the
// namespace every target receives (namespace.ts) and serves it (server.ts); the send loops report
// what they played. A definition it cannot read (a Redis user granted before the bridge could read
// definitions: NOPERM) leaves that layout out of the namespace and is said in the log and in
// `problem()`; it never stops the bridge. The server runs in a thread of its own
// (server-thread.ts): what the send loops played is handed to it once per turn of the event loop,
// in one message. The server is advertised over mDNS (mdns.ts) unless it listens on loopback or
// oscQueryMdns is false.
import type { RedisClient } from '../../runtime/redis.js';
import type { Logger } from '../../runtime/log.js';
import { layoutKey } from '../../schemas/redis-keys.js';
import type { Page } from '../../schemas/types.js';
import type { BridgeConfig } from '../config.js';
import { bridgeMethods, type LayoutControls, type Method } from './namespace.js';
import { advertiseOscQuery, isLoopback } from './mdns.js';
import { Worker } from 'node:worker_threads';
import type { PlayedMessage } from './server.js';
import type { FromThread, ServerOptions, ToThread } from './server-thread.js';

const POLL_MS = 2000;

/** The OSCQuery server as the bridge's main thread holds it: a handle on its thread. */
export interface OscQueryServer {
  readonly port: number;
  /** WebSocket clients, as the thread last said */
  readonly clients: number;
  setNamespace(methods: ReadonlyMap<string, Method>): void;
  played(source: string, messages: readonly PlayedMessage[]): void;
  close(): Promise<void>;
}

/** Starts the server's thread; resolves once it listens (rejects with its listen error). */
async function startServerThread(options: ServerOptions, onError: (message: string) => void): Promise<OscQueryServer> {
  const worker = new Worker(new URL('./server-thread.js', import.meta.url), { workerData: options, name: 'oscquery' });
  const send = (m: ToThread) => worker.postMessage(m);
  let clients = 0;
  let closed: (() => void) | null = null;
  const port = await new Promise<number>((resolve, reject) => {
    worker.on('message', (m: FromThread) => {
      if (m.op === 'listening') resolve(m.port);
      else if (m.op === 'failed') reject(new Error(m.message));
      else if (m.op === 'error') onError(m.message);
      else if (m.op === 'clients') clients = m.count;
      else closed?.();
    });
    worker.on('error', (e) => {
      onError(`the OSCQuery thread failed: ${e.message}`);
      reject(e);
    });
  });
  /** what the send loops played since this turn began, sent in one message */
  let batch: [string, PlayedMessage[]][] = [];
  const flush = () => {
    send({ op: 'played', batch });
    batch = [];
  };
  return {
    port,
    get clients() {
      return clients;
    },
    setNamespace: (methods) => send({ op: 'namespace', methods: [...methods] }),
    played(source, messages) {
      if (batch.length === 0) setImmediate(flush);
      batch.push([source, [...messages]]);
    },
    async close() {
      const done = new Promise<void>((r) => (closed = r));
      send({ op: 'close' });
      await Promise.race([done, new Promise((r) => setTimeout(r, 2000))]);
      await worker.terminate();
    },
  };
}

export interface OscQuery {
  readonly port: number;
  readonly server: OscQueryServer;
  /** The send loop of `layoutId` played these messages to its target `n`. */
  played(layoutId: string, target: number, messages: readonly PlayedMessage[]): void;
  /** Why some layout is missing from the namespace, or null. */
  problem(): string | null;
  close(): Promise<void>;
}

interface Known {
  version: string | null;
  controls: LayoutControls | null;
  error: string | null;
}

/** A layout's definition from its record, or null when there is none. */
async function readDefinition(redis: RedisClient, key: string): Promise<{ version: string | null; controls: LayoutControls | null }> {
  const [version, name, pages, zones] = await redis.hmget(key, 'version', 'name', 'pages', 'zones');
  if (pages === null || pages === undefined) return { version: version ?? null, controls: null };
  return { version: version ?? null, controls: { name: name ?? '', pages: JSON.parse(pages) as Page[], zones: zones ? (JSON.parse(zones) as string[]) : [] } };
}

export async function startOscQuery(config: BridgeConfig, redis: RedisClient, log: Logger): Promise<OscQuery> {
  const first = config.layouts.flatMap((l) => l.targets)[0]!; // the configuration has one when OSCQuery is on
  const transport = (t: { transport: string }) => (t.transport === 'udp' ? 'udp' : 'tcp');
  const server = await startServerThread({
    host: config.oscQueryHost,
    port: config.oscQueryPort!,
    name: `audience-bridge ${config.bridgeId}`,
    description: `audience-bridge ${config.bridgeId}: what its displays receive (${config.layouts.map((l) => l.layoutId).join(', ')})`,
    hostInfo: {
      OSC_IP: first.host,
      OSC_PORT: first.port,
      OSC_TRANSPORT: first.transport === 'udp' ? 'UDP' : 'TCP',
      TARGETS: [...new Set(config.layouts.flatMap((l) => l.targets.map((t) => `${transport(t)}://${t.host.includes(':') ? `[${t.host}]` : t.host}:${t.port}`)))],
    },
    access: { allowedHosts: config.oscQueryAllowedHosts, allowedOrigins: config.oscQueryAllowedOrigins },
  }, (message) => log.warn({ err: message }, 'OSCQuery: the server failed to take a connection'));
  const mdns = (config.oscQueryMdns ?? !isLoopback(config.oscQueryHost)) ? advertiseOscQuery(`audience-bridge ${config.bridgeId}`, server.port, log) : null;
  const known = new Map<string, Known>(config.layouts.map((l) => [l.layoutId, { version: null, controls: null, error: null }]));
  let saidConflicts = '';

  const rebuild = () => {
    const { methods, conflicts } = bridgeMethods(config.layouts.map((l) => ({ layoutId: l.layoutId, targets: l.targets, controls: known.get(l.layoutId)!.controls })));
    server.setNamespace(methods);
    const said = conflicts.join('; ');
    if (said !== '' && said !== saidConflicts) log.warn({ conflicts }, 'OSCQuery: an address is played by more than one source; the first in the configuration describes it');
    saidConflicts = said;
  };

  /** Reads the definitions whose version changed; rebuilds the namespace if any did. */
  const poll = async () => {
    let changed = false;
    await Promise.all(
      config.layouts.map(async ({ layoutId }) => {
        const k = known.get(layoutId)!;
        const key = layoutKey(config.redisPrefix, layoutId);
        try {
          const version = await redis.hget(key, 'version');
          if (version !== null && version === k.version && k.controls !== null) return;
          const read = await readDefinition(redis, key);
          if (k.error !== null) log.info({ layoutId }, "OSCQuery: the layout's definition is readable again");
          changed ||= read.version !== k.version || (read.controls === null) !== (k.controls === null);
          Object.assign(k, read, { error: null });
        } catch (e) {
          const message = (e as Error).message;
          const error = /NOPERM/.test(message) ? `the bridge's Redis user may not read layout ${layoutId}'s definition: grant it again (audiencectl bridge grant)` : `layout ${layoutId}'s definition could not be read: ${message}`;
          if (error !== k.error) log.warn({ layoutId, err: message }, `OSCQuery: ${error}; its controls are left out of the namespace`);
          k.error = error;
        }
      }),
    );
    if (changed) rebuild();
  };
  await poll();
  rebuild();
  const timer = setInterval(() => void poll().catch((e: unknown) => log.warn({ err: (e as Error).message }, 'OSCQuery: reading the definitions failed')), POLL_MS);
  timer.unref();

  return {
    port: server.port,
    server,
    played: (layoutId, target, messages) => server.played(`${layoutId}#${target}`, messages),
    problem: () => {
      const errors = [...known.values()].map((k) => k.error).filter((e): e is string => e !== null);
      return errors.length > 0 ? `OSCQuery: ${errors.join('; ')}` : null;
    },
    async close() {
      clearInterval(timer);
      await mdns?.close();
      await server.close();
    },
  };
}
