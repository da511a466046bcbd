// A bridge that cannot read its layout's stream (the venue's link cut, the layout's master failing
// over) learns nothing about the gateway processes: silence from them then proves nothing, so their
// leases do not run out meanwhile, and the display keeps the crowd as it was instead of dropping a
// process's share. Once the bridge reads again, the leases count from what it reads. Two gateway
// processes (one share each), a real bridge behind the fault proxy, liblo's oscdump on the wire.
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bridge } from '../../bridge/app.js';
import { freePort } from '../../dev/redis-server.js';
import { CROWD_LEASE_MS } from '../../schemas/aggregate.js';
import { startTestBridge } from '../helpers/bridge.js';
import { CROWD_LAYOUT, LAYOUT } from '../helpers/crowd.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { eventually, mintToken, postAction, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
const EACH = 10;
let first: TestGateway;
let second: TestGateway;
let bridge: Bridge;
let link: FaultProxy;
let dump: ChildProcess;
let wire = '';

beforeAll(async () => {
  first = await startTestGateway({ redisUrl: redis.get().server.url, layout: CROWD_LAYOUT });
  second = await startTestGateway({ redisUrl: redis.get().server.url, sameDataAs: first });
  link = new FaultProxy({ targets: () => [redis.get().server.port] });
  await link.start();
  const port = await freePort();
  dump = spawn('oscdump', ['-L', String(port)]);
  dump.stdout!.on('data', (d) => (wire += d));
  await new Promise((r) => setTimeout(r, 300));
  ({ bridge } = await startTestBridge({ redisUrl: `redis://127.0.0.1:${link.port}`, prefix: first.config.redisPrefix, layouts: [{ layoutId: LAYOUT, tickHz: 100, targets: [{ host: '127.0.0.1', port, booleans: 'int' }] }] }));
}, 30_000);
afterAll(async () => {
  await bridge?.stop();
  await link?.stop();
  dump?.kill('SIGKILL');
  await second?.close();
  await first?.close();
});

/** Every n the wire carried for the Strobe, in order. */
const strobeNs = () =>
  wire
    .split('\n')
    .map((l) => l.replace(/^[0-9a-f]{8}\.[0-9a-f]{8} /, '').trim().split(' '))
    .filter((l) => l[0] === '/003/n')
    .map((l) => Number(l[2]));

describe("the crowd's leases while the bridge cannot read", () => {
  it(`do not run out: a ${(2 * CROWD_LEASE_MS) / 1000} s cut of the bridge's link leaves the display's n as it was`, async () => {
    for (const g of [first, second]) {
      for (let i = 0; i < EACH; i++) expect((await postAction(g, await mintToken(first, LAYOUT, first.apiKey), { layoutId: LAYOUT, lid: 3, type: 'Toggle', value: true })).status).toBe(200);
    }
    await eventually(() => strobeNs().at(-1) === 2 * EACH);
    const before = strobeNs().length;
    link.cut();
    await new Promise((r) => setTimeout(r, 2 * CROWD_LEASE_MS));
    link.restore();
    await new Promise((r) => setTimeout(r, 3000)); // read again, and a lease's worth after it
    const during = strobeNs().slice(before);
    expect(during.filter((n) => n !== 2 * EACH), `n on the wire from the cut on: ${during.join(' ')}`).toEqual([]);
    expect(strobeNs().at(-1)).toBe(2 * EACH);
  }, 30_000);
});
