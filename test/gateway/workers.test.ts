// GATEWAY_WORKERS=2: two gateway processes serve one port under a supervisor that replaces a
// worker killed with kill -9, loses nothing it accepted, and sums both workers' requests in one
// /metrics. The supervisor alone speaks to systemd (READY once, WATCHDOG, STOPPING). SIGTERM stops all.
import { execFileSync, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { stopProcess } from '../helpers/bridge.js';
import { spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { eventually, mintToken, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { sample, scrape } from '../helpers/metrics.js';
import { startFakeNotifySocket } from '../helpers/notify-socket.js';
import { recordFigure } from '../helpers/figures.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
let seeded: TestGateway;
let gw: GatewayProcess;
let notifySocket: ChildProcess | undefined;
afterAll(async () => {
  if (gw) await stopProcess(gw.child, 'SIGKILL');
  notifySocket?.kill('SIGKILL');
  await seeded?.close();
});

/** pids listening on the port (ss -ltnp). */
function listeners(port: number): number[] {
  const out = execFileSync('ss', ['-Hltnp', `sport = :${port}`], { encoding: 'utf8' });
  return [...out.matchAll(/pid=(\d+)/g)].map((m) => Number(m[1])).sort();
}

/** POST /action on a connection of its own (so the kernel picks a worker for each). */
function postOnNewConnection(port: number, token: string, body: unknown): Promise<number> {
  return new Promise((resolve) => {
    const data = JSON.stringify(body);
    const req = request({ host: '127.0.0.1', port, path: '/action', method: 'POST', agent: false, headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'content-length': Buffer.byteLength(data) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0)); // reset by a worker that died: not accepted
    req.end(data);
  });
}

describe('GATEWAY_WORKERS=2', () => {
  it('serves one port from two processes, replaces a killed worker, loses nothing accepted, and counts both in one /metrics', async () => {
    seeded = await startTestGateway({ redisUrl: redis.get().server.url });
    const token = await mintToken(seeded, seeded.layoutId, seeded.apiKey);
    const systemd = await startFakeNotifySocket();
    notifySocket = systemd.child;
    gw = await spawnGateway({ REDIS_URL: redis.get().server.url, REDIS_PREFIX: seeded.config.redisPrefix, GATEWAY_WORKERS: '2', NOTIFY_SOCKET: systemd.path, WATCHDOG_USEC: '1000000' });
    await eventually(() => systemd.text().includes('READY=1') && systemd.pings.length >= 1, 5000);
    expect(systemd.text().match(/READY=1/g)).toHaveLength(1); // the supervisor speaks for all; workers say nothing
    const workers = listeners(gw.port);
    expect(workers).toHaveLength(2);
    expect(workers).not.toContain(gw.child.pid);

    const accepted: string[] = [];
    let sent = 0;
    const send = async (value: string) => {
      sent++;
      if ((await postOnNewConnection(gw.port, token, { layoutId: seeded.layoutId, lid: 5, type: 'String', value })) === 200) accepted.push(value);
    };
    for (let i = 0; i < 200; i++) await send(`before-${i}`);
    expect(accepted).toHaveLength(200);
    const text = await scrape(gw.opsPort);
    expect(sample(text, 'audience_gateway_http_requests_total{route="/action",status="200"}')).toBe(200); // both workers' requests, summed

    // kill -9 one worker while requests keep coming
    const load = (async () => {
      for (let i = 0; i < 300; i++) await send(`during-${i}`);
    })();
    await new Promise((r) => setTimeout(r, 50));
    process.kill(workers[0]!, 'SIGKILL');
    await load;
    await eventually(() => listeners(gw.port).length === 2 && !listeners(gw.port).includes(workers[0]!), 10_000);
    for (let i = 0; i < 50; i++) await send(`after-${i}`);

    // nothing accepted is lost: every 200 is one stream entry
    const entries = await redis.get().client.xrange(seeded.gw.stores.keys.actions(seeded.layoutId), '-', '+');
    const inStream = new Set(entries.map(([, f]) => (JSON.parse(f[1]!) as { value: string }).value));
    expect(accepted.filter((v) => !inStream.has(v))).toEqual([]);
    expect(accepted.length).toBeGreaterThan(sent - 50); // at most the requests that were on the killed worker failed
    expect(sample(await scrape(gw.opsPort), 'audience_gateway_worker_restarts_total')).toBe(1);
    expect((await fetch(`http://127.0.0.1:${gw.opsPort}/readyz`)).status).toBe(200);

    const pids = listeners(gw.port);
    expect(await stopProcess(gw.child, 'SIGTERM')).toBe(0);
    await eventually(() => systemd.text().includes('STOPPING=1'), 3000); // the fake socket's output may arrive a little later
    for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow(); // the workers are gone too
  });

  it('replaces a worker that stops sending heartbeats (wedged: SIGSTOP)', async () => {
    const wedged = await spawnGateway({ REDIS_URL: redis.get().server.url, REDIS_PREFIX: seeded.config.redisPrefix, GATEWAY_WORKERS: '2' });
    try {
      const [victim] = listeners(wedged.port);
      process.kill(victim!, 'SIGSTOP');
      const stopped = Date.now();
      await eventually(() => listeners(wedged.port).length === 2 && !listeners(wedged.port).includes(victim!), 20_000);
      recordFigure('gateway_wedged_worker_replaced_after_ms', Date.now() - stopped, 'ms', 'heartbeats stop; the supervisor kills it after 10 s of silence');
      await eventually(() => /stopped sending heartbeats; killing it/.test(wedged.output()), 3000); // the pipe may deliver the line a little later
    } finally {
      await stopProcess(wedged.child, 'SIGKILL');
    }
  }, 30_000);
});

