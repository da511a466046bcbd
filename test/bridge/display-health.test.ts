// Display health through the real bridge process: three targets of one layout, a UDP display that
// listens (liblo's oscdump), a UDP port nothing listens on (the kernel refuses), and a TCP display
// the test stops and restarts. audience_bridge_target_up follows each within 2 s, with no action
// sent at all (an idle UDP target is probed); the STATUS line names the unreachable ones; the
// presence set marks them down, which the team page's API counts (displaysReachable) while
// destinationCount still counts all three.
import type { ChildProcess } from 'node:child_process';
import { createServer, type Server, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DestinationCounts } from '../../gateway/layouts/destinations.js';
import { RedisKeys } from '../../gateway/store/keys.js';
import { freePort } from '../../dev/redis-server.js';
import { presenceKey } from '../../schemas/redis-keys.js';
import { configFile, spawnBridge, stopProcess } from '../helpers/bridge.js';
import { eventually } from '../helpers/gateway.js';
import { startFakeNotifySocket, type FakeNotifySocket } from '../helpers/notify-socket.js';
import { startOscdump, type Oscdump } from '../helpers/oscdump.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';
import { refusingPort } from '../helpers/udp-sink.js';

const LAYOUT = 'health-show';
const redis = useRedis();
let prefix: string;
let bridge: ChildProcess;
let output: () => string;
let dump: Oscdump;
let refusing: { port: number; release: () => Promise<void> };
let tcpPort: number;
let tcp: Server | null = null;
const sockets = new Set<Socket>();
let notify: FakeNotifySocket;

function listenTcp(): Promise<Server> {
  const server = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.resume();
  });
  return new Promise((resolve) => server.listen(tcpPort, '127.0.0.1', () => resolve(server)));
}
async function stopTcp(): Promise<void> {
  const server = tcp!;
  tcp = null;
  for (const s of sockets) s.destroy();
  await new Promise((r) => server.close(r));
}

beforeAll(async () => {
  prefix = randomPrefix();
  dump = await startOscdump();
  refusing = await refusingPort();
  tcpPort = await freePort();
  tcp = await listenTcp();
  notify = await startFakeNotifySocket();
  const config = configFile({
    redisUrl: redis.get().server.url,
    prefix,
    bridgeId: 'health',
    presenceTtlMs: 1500,
    layouts: [{ layoutId: LAYOUT, targets: [{ host: '127.0.0.1', port: dump.port }, { host: '127.0.0.1', port: refusing.port }, { host: '127.0.0.1', port: tcpPort, transport: 'tcp' }] }],
  });
  ({ child: bridge, output } = await spawnBridge(['--config', config], { NOTIFY_SOCKET: notify.path }));
}, 30_000);
afterAll(async () => {
  if (bridge) await stopProcess(bridge);
  dump?.child.kill();
  await refusing?.release();
  if (tcp) await stopTcp();
  notify?.child.kill('SIGKILL');
});

/** target -> 1 or 0, from the bridge's /metrics */
async function up(): Promise<Record<string, number>> {
  const ops = Number(/"opsPort":(\d+)/.exec(output())![1]);
  const text = await (await fetch(`http://127.0.0.1:${ops}/metrics`)).text();
  return Object.fromEntries([...text.matchAll(/^audience_bridge_target_up\{layout="health-show",target="([^"]+)"\} (\d)$/gm)].map((m) => [m[1]!, Number(m[2])]));
}
const name = (port: number) => `127.0.0.1:${port}`;

describe('display health', () => {
  it('follows each display within 2 s, with nothing sent: a listening UDP display is up, a refusing one down, a TCP one down and up again as it stops and restarts', async () => {
    const started = Date.now();
    await eventually(async () => {
      const u = await up();
      return u[name(dump.port)] === 1 && u[name(refusing.port)] === 0 && u[name(tcpPort)] === 1;
    }, 2000);
    console.log(`figure: display_health_first_verdict_ms = ${Date.now() - started}`);

    await stopTcp();
    const stopped = Date.now();
    await eventually(async () => (await up())[name(tcpPort)] === 0, 2000);
    const down = Date.now() - stopped;
    tcp = await listenTcp();
    const restarted = Date.now();
    await eventually(async () => (await up())[name(tcpPort)] === 1, 2000);
    console.log(`figure: display_health_tcp_down_ms = ${down}; display_health_tcp_up_ms = ${Date.now() - restarted}`);
    expect((await up())[name(dump.port)]).toBe(1); // the probes never made the listening display look gone
    expect(dump.lines).toEqual([]); // and printed nothing there
  });

  it('says which displays are unreachable in STATUS, and marks them down in the presence set that the team page counts', async () => {
    await eventually(() => notify.text().includes(`2 of 3 displays reachable (not: ${name(refusing.port)})`));
    const key = presenceKey(prefix, LAYOUT);
    await eventually(async () => (await redis.get().client.zrange(key, 0, -1)).sort().join(',') === [`health|${name(dump.port)}`, `health|${name(refusing.port)}|down`, `health|${name(tcpPort)}`].sort().join(','));
    const admin = new Redis(redis.get().server.url);
    try {
      const counts = new DestinationCounts(admin, new RedisKeys(prefix));
      expect(await counts.both(LAYOUT)).toEqual({ count: 3, reachable: 2 });
    } finally {
      admin.disconnect();
    }
  });
});
