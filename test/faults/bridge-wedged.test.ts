// A wedged bridge (SIGSTOP) stops its WATCHDOG=1 pings, so systemd's watchdog fires and restarts it.
import type { ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { configFile, spawnBridge } from '../helpers/bridge.js';
import { recordFigure } from '../helpers/figures.js';
import { startFakeNotifySocket } from '../helpers/notify-socket.js';
import { eventually } from '../helpers/gateway.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';

const redis = useRedis();
const children: ChildProcess[] = [];
afterAll(() => children.forEach((c) => c.kill('SIGKILL')));

describe('bridge wedged', () => {
  it('stops pinging the watchdog while stopped, so WatchdogSec passes without WATCHDOG=1', async () => {
    const fake = await startFakeNotifySocket();
    children.push(fake.child);
    const { pings } = fake;
    const watchdogSec = 1;
    const file = configFile({ redisUrl: redis.get().server.url, prefix: randomPrefix(), bridgeId: 'wedged', layouts: [{ layoutId: 'show', targets: [{ host: '127.0.0.1', port: 9 }] }] });
    const { child } = await spawnBridge(['--config', file], { NOTIFY_SOCKET: fake.path, WATCHDOG_USEC: String(watchdogSec * 1_000_000) });
    children.push(child);
    await eventually(() => pings.length >= 2);
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
    await eventually(() => pings.some((p) => p > resumed));
  });
});
