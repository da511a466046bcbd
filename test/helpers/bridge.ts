// Bridges over a real Redis, sending to real UDP sockets: in-process, or as the real process.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startBridge, type Bridge } from '../../bridge/app.js';
import { loadBridgeConfig, type BridgeConfig } from '../../bridge/config.js';
import { BRIDGE_NODE_FLAGS } from '../../bridge/node-flags.js';
import { createLogger } from '../../runtime/log.js';
import { afterAll, beforeAll } from 'vitest';
import { UdpSink } from './udp-sink.js';

export const BRIDGE_BIN = fileURLToPath(new URL('../../dist/bridge/main.js', import.meta.url));
/** The bridge as its systemd unit and its shebang run it: Node with the bridge's V8 flags (bridge/node-flags.ts). */
export const BRIDGE_COMMAND: readonly string[] = [process.execPath, ...BRIDGE_NODE_FLAGS, BRIDGE_BIN];

export interface TestBridgeOptions {
  redisUrl: string;
  prefix: string;
  layouts: Record<string, unknown>[];
  bridgeId?: string;
  presenceTtlMs?: number;
  /** reclaim entries pending longer than this (default 30 s) */
  reclaimIdleMs?: number;
  /** the config file's sendCpu (thread-priority.ts) */
  sendCpu?: number;
  /** the config file's redisTls */
  redisTls?: Record<string, string>;
  /** more top-level keys of the config file (oscQueryPort, ...) */
  more?: Record<string, unknown>;
}

/** Writes a config file, as a venue technician would. */
export function configFile(o: TestBridgeOptions): string {
  const file = join(mkdtempSync(join(tmpdir(), 'ac-bridge-')), 'bridge.json');
  const body = { bridgeId: o.bridgeId ?? 'test-bridge', redisUrl: o.redisUrl, redisPrefix: o.prefix, logLevel: 'silent', opsPort: 0, ...(o.presenceTtlMs && { presenceTtlMs: o.presenceTtlMs }), ...(o.sendCpu !== undefined && { sendCpu: o.sendCpu }), ...(o.redisTls && { redisTls: o.redisTls }), ...o.more, layouts: o.layouts };
  writeFileSync(file, JSON.stringify(body));
  return file;
}

export async function startTestBridge(o: TestBridgeOptions): Promise<{ bridge: Bridge; config: BridgeConfig }> {
  const config = loadBridgeConfig({ config: configFile(o) }, {});
  const bridge = await startBridge(config, { log: createLogger('audience-bridge', 'silent'), notifyEnv: {}, blockMs: 200, ...(o.reclaimIdleMs && { reclaimIdleMs: o.reclaimIdleMs }) });
  return { bridge, config };
}

/**
 * Runs audience-bridge to its exit (killed after 10 s): its exit code, stdout and stderr. `command`
 * is what runs it (say, under taskset), the bridge's arguments follow it.
 */
export function runBridge(
  args: string[],
  env: Record<string, string> = {},
  command: readonly string[] = BRIDGE_COMMAND,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const [program = '', ...before] = command;
  return new Promise((resolve) => {
    execFile(program, [...before, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, timeout: 10_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/**
 * The real audience-bridge process; resolves once it logs that it runs (so LOG_LEVEL must let info
 * through). If it does not within `timeoutMs`, it is killed and the promise rejects: never an orphan.
 */
export async function spawnBridge(
  args: string[],
  env: Record<string, string> = {},
  timeoutMs = 10_000,
  command: readonly string[] = BRIDGE_COMMAND,
): Promise<{ child: ChildProcess; output: () => string }> {
  const [program = '', ...before] = command;
  const child = spawn(program, [...before, ...args], { env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'info', ...env } });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`audience-bridge did not say it runs within ${timeoutMs} ms: ${out}`));
    }, timeoutMs);
    const check = () => {
      if (!out.includes('audience-bridge running')) return;
      clearTimeout(timer);
      resolve();
    };
    child.stdout.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`audience-bridge exited with ${code}: ${out}`));
    });
  });
  return { child, output: () => out };
}

export async function stopProcess(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  child.kill(signal);
  return exited;
}

/**
 * An in-process bridge for one layout, sending to one UDP sink: started before the enclosing
 * suite's tests and stopped after them. Read `b.bridge` and `b.sink` inside tests.
 */
export function useBridgeWithSink(redisUrl: () => string, layout: () => { prefix: string; layoutId: string }): { bridge: Bridge; sink: UdpSink } {
  const b = { sink: new UdpSink() } as { bridge: Bridge; sink: UdpSink };
  beforeAll(async () => {
    await b.sink.start();
    const { prefix, layoutId } = layout();
    ({ bridge: b.bridge } = await startTestBridge({ redisUrl: redisUrl(), prefix, layouts: [{ layoutId, targets: [{ host: '127.0.0.1', port: b.sink.port }] }] }));
  });
  afterAll(async () => {
    await b.bridge?.stop();
    await b.sink.stop();
  });
  return b;
}
