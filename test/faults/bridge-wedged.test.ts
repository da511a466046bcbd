// A wedged bridge (SIGSTOP) stops its WATCHDOG=1 pings, so systemd's watchdog fires and restarts it.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { configFile, spawnBridge } from '../helpers/bridge.js';
import { recordFigure } from '../helpers/figures.js';
import { eventually } from '../helpers/gateway.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';

const redis = useRedis();
const children: ChildProcess[] = [];
afterAll(() => children.forEach((c) => c.kill('SIGKILL')));

describe('bridge wedged', () => {
  it('stops pinging the watchdog while stopped, so WatchdogSec passes without WATCHDOG=1', async () => {
    const socketPath = join(mkdtempSync(join(tmpdir(), 'ac-notify-')), 'notify.sock');
    const fake = spawn('python3', [fileURLToPath(new URL('../helpers/notify-socket.py', import.meta.url)), socketPath]);
    children.push(fake);
    const pings: number[] = [];
    let text = '';
    fake.stdout.on('data', (d: Buffer) => {
      text += String(d);
      for (const _ of String(d).match(/WATCHDOG=1/g) ?? []) pings.push(performance.now());
    });
    await eventually(() => text.includes('listening'));
    const watchdogSec = 1;
    const file = configFile({ redisUrl: redis.get().server.url, prefix: randomPrefix(), bridgeId: 'wedged', layouts: [{ layoutId: 'show', targets: [{ host: '127.0.0.1', port: 9 }] }] });
    const { child } = await spawnBridge(['--config', file], { NOTIFY_SOCKET: socketPath, WATCHDOG_USEC: String(watchdogSec * 1_000_000) });
    children.push(child);
    await eventually(() => pings.length >= 2, 5000);
    child.kill('SIGSTOP');
    const stoppedAt = performance.now();
    await new Promise((r) => setTimeout(r, watchdogSec * 1000 * 2));
    const lastBefore = Math.max(...pings.filter((p) => p <= stoppedAt + 50));
    const during = pings.filter((p) => p > stoppedAt + 50);
    expect(during).toEqual([]); // systemd would have seen WatchdogSec pass with no ping: SIGABRT and restart
    const silence = performance.now() - lastBefore;
    expect(silence).toBeGreaterThan(watchdogSec * 1000);
    recordFigure('wedged_bridge_silence_ms', silence, 'ms', `> WatchdogSec (${watchdogSec * 1000} ms) = detected`);
    child.kill('SIGCONT');
    const resumed = performance.now();
    await eventually(() => pings.some((p) => p > resumed), 5000);
  });
});
