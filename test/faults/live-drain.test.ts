// A gateway process that stops under 2,000 live sockets, behind a load balancer (the tests' TCP
// proxy, which skips a gateway not listening), with the client library's phones: it stops
// listening, then closes its sockets with 1012 over LIVE_DRAIN_MS, each with when to come back.
// The surviving gateway receives the returning upgrades as a ramp: no second passes twice the
// planned rate (2,000 sockets over LIVE_DRAIN_MS), and every phone is back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { LiveClient } from '../../client/live-client.js';
import type { Redis } from 'ioredis';
import { stopProcess } from '../helpers/bridge.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { recordFigure } from '../helpers/figures.js';
import { seedLayout, spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { DEMO_LAYOUT, eventually, postJson } from '../helpers/gateway.js';
import { killAfterEach } from '../helpers/processes.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';

const SOCKETS = 2000;
const DRAIN_MS = 5000;
const redis = useRedis();
const kill = killAfterEach();
const prefix = randomPrefix();
let apiKey = '';
let admin: Redis;
beforeAll(async () => {
  ({ apiKey, admin } = await seedLayout(redis.get().server.url, prefix, DEMO_LAYOUT));
});
afterAll(() => admin.disconnect());

describe('a gateway that stops under 2,000 sockets', () => {
  it('spreads their returns to the surviving gateway: no second above twice the planned ramp', async () => {
    const env = { REDIS_URL: redis.get().server.url, REDIS_PREFIX: prefix, LIVE_DRAIN_MS: String(DRAIN_MS), LIVE_NEW_SOCKETS_PER_SECOND: '10000' };
    const stopping: GatewayProcess = await spawnGateway(env);
    kill(stopping.child);
    const surviving: GatewayProcess = await spawnGateway(env);
    kill(surviving.child);
    let targets = [stopping.port];
    const upgradesAt: number[] = [];
    const balancer = new FaultProxy({ targets: () => targets, onLink: (port) => port === surviving.port && upgradesAt.push(Date.now()) });
    await balancer.start();
    const clients: LiveClient[] = [];
    try {
      const tokens: string[] = [];
      for (let i = 0; i < SOCKETS; i += 100) {
        tokens.push(...(await Promise.all(Array.from({ length: 100 }, async () => (await postJson(`${surviving.url}/token`, { layoutId: DEMO_LAYOUT.layoutId }, { 'x-api-key': apiKey })).body.token as string))));
      }
      const onPage = new Set<LiveClient>();
      for (const token of tokens) {
        const c = new LiveClient({ url: `ws://127.0.0.1:${balancer.port}/live`, token, WebSocket: WebSocket });
        c.on('page', () => onPage.add(c));
        clients.push(c);
      }
      // every phone is on the stopping gateway before it stops: a phone still opening would land on the surviving one outside the drain's ramp
      await eventually(() => onPage.size >= SOCKETS && clients.every((c) => c.state === 'open'), 30_000);
      targets = [stopping.port, surviving.port]; // the balancer knows both; the stopping one refuses once it stops listening
      const drainStarted = Date.now();
      await stopProcess(stopping.child, 'SIGTERM');
      await eventually(() => clients.every((c) => c.state === 'open') && upgradesAt.length >= SOCKETS, 30_000);
      const perSecond = new Map<number, number>();
      for (const at of upgradesAt) perSecond.set(Math.floor((at - drainStarted) / 1000), (perSecond.get(Math.floor((at - drainStarted) / 1000)) ?? 0) + 1);
      const planned = SOCKETS / (DRAIN_MS / 1000);
      const busiest = Math.max(...perSecond.values());
      console.info(`figure: upgrades a second at the surviving gateway: ${JSON.stringify(Object.fromEntries(perSecond))}`);
      recordFigure('live_drain_busiest_second_upgrades', busiest, 'upgrades/s', `${2 * planned} (twice the planned ramp: ${SOCKETS} sockets over LIVE_DRAIN_MS=${DRAIN_MS})`);
      expect(busiest).toBeLessThanOrEqual(2 * planned);
      expect(upgradesAt.length).toBeGreaterThanOrEqual(SOCKETS);
    } finally {
      for (const c of clients) c.stop();
      await balancer.stop();
      await stopProcess(surviving.child, 'SIGKILL');
      await stopProcess(stopping.child, 'SIGKILL');
    }
  }, 120_000);
});
