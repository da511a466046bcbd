// A gateway process that dies under a crowd skews the crowd's value for at most about 3 s: each
// process refreshes its summaries every second while it holds participants, and the bridge drops
// a source silent for CROWD_LEASE_MS. One that stops gracefully (a rolling deploy) retracts its
// share at once. Real gateway processes, a real bridge, liblo's oscdump on the wire.
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bridge } from '../../bridge/app.js';
import { freePort } from '../../dev/redis-server.js';
import { CROWD_LEASE_MS } from '../../schemas/aggregate.js';
import { startTestBridge, stopProcess } from '../helpers/bridge.js';
import { CROWD_LAYOUT, LAYOUT } from '../helpers/crowd.js';
import { recordFigure } from '../helpers/figures.js';
import { eventually, mintToken, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { postOnNewConnection, spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
const PARTICIPANTS = 200;
let seeded: TestGateway;
let bridge: Bridge;
let dump: ChildProcess;
let wire = '';
const processes: GatewayProcess[] = [];

beforeAll(async () => {
  seeded = await startTestGateway({ redisUrl: redis.get().server.url, layout: CROWD_LAYOUT });
  const port = await freePort();
  dump = spawn('oscdump', ['-L', String(port)]);
  dump.stdout!.on('data', (d) => (wire += d));
  await new Promise((r) => setTimeout(r, 300));
  ({ bridge } = await startTestBridge({ redisUrl: redis.get().server.url, prefix: seeded.config.redisPrefix, layouts: [{ layoutId: LAYOUT, tickHz: 100, targets: [{ host: '127.0.0.1', port, booleans: 'int' }] }] }));
}, 30_000);
afterAll(async () => {
  for (const p of processes) p.child.kill('SIGKILL');
  await bridge?.stop();
  dump?.kill('SIGKILL');
  await seeded?.close();
});

/** The last value oscdump printed for an address. */
function lastOnWire(address: string): number | null {
  const lines = wire.split('\n').map((l) => l.replace(/^[0-9a-f]{8}\.[0-9a-f]{8} /, '').trim().split(' '));
  const last = lines.filter((l) => l[0] === address).pop();
  return last ? Number(last[2]) : null;
}
const strobeIs = (value: number, n: number) => lastOnWire('/003') === value && lastOnWire('/003/n') === n;


/**
 * Two gateway processes; every participant switches the Strobe toggle (fraction, 60 s window) on
 * through one of them (alternately), and the wire shows 1 with n = PARTICIPANTS. Then `stop` ends
 * the first process, every participant switches off through the second, and the resolved time is
 * how long after `stop` the wire showed the truth again: 0 with n = PARTICIPANTS.
 */
async function crowdThenLose(stop: (victim: GatewayProcess) => void): Promise<number> {
  const env = { REDIS_URL: redis.get().server.url, REDIS_PREFIX: seeded.config.redisPrefix };
  const [a, b] = [await spawnGateway(env), await spawnGateway(env)];
  processes.push(a, b);
  const tokens = await Promise.all(Array.from({ length: PARTICIPANTS }, () => mintToken(seeded, LAYOUT, seeded.apiKey)));
  const toggle = (value: boolean) => ({ layoutId: LAYOUT, lid: 3, type: 'Toggle', value });
  const on = await Promise.all(tokens.map((t, i) => postOnNewConnection((i % 2 === 0 ? a : b).port, t, toggle(true))));
  expect(new Set(on)).toEqual(new Set([200]));
  await eventually(() => strobeIs(1, PARTICIPANTS));
  const stopped = Date.now();
  stop(a);
  const off = await Promise.all(tokens.map((t) => postOnNewConnection(b.port, t, toggle(false))));
  expect(new Set(off)).toEqual(new Set([200]));
  await eventually(() => strobeIs(0, PARTICIPANTS), 10_000);
  const elapsed = Date.now() - stopped;
  await stopProcess(b.child, 'SIGTERM');
  return elapsed;
}

describe('a gateway process lost under a crowd', () => {
  it(`kill -9: the display's value and n are right again within ${CROWD_LEASE_MS} ms and a tick`, async () => {
    const elapsed = await crowdThenLose((victim) => victim.child.kill('SIGKILL'));
    recordFigure('crowd_right_again_after_kill_ms', elapsed, 'ms', 'kill -9 of one of two gateway processes; its participants act again through the other');
    expect(elapsed).toBeLessThanOrEqual(CROWD_LEASE_MS + 500);
    await eventually(() => strobeIs(0, 0)); // b stopped gracefully: its share is retracted too
  }, 30_000);

  it('a graceful stop (SIGTERM, as in a rolling deploy) retracts its share at once', async () => {
    const elapsed = await crowdThenLose((victim) => victim.child.kill('SIGTERM'));
    recordFigure('crowd_right_again_after_graceful_stop_ms', elapsed, 'ms', 'SIGTERM of one of two gateway processes; its participants act again through the other');
    expect(elapsed).toBeLessThan(1000);
  }, 30_000);
});
