// audience_gateway_layout_destinations: for each layout in use on a gateway process (its live
// sockets, or asked for by GET /layout in the last 5 minutes), the displays the venue bridges
// register for it. 0 while phones use a layout is AudienceLayoutWithoutBridge: the audience acts
// and nothing plays. A real gateway, a real bridge registering a display, a real Redis.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bridge } from '../../bridge/app.js';
import { startTestBridge } from '../helpers/bridge.js';
import { eventually, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { sample, scrape } from '../helpers/metrics.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
let t: TestGateway;
let bridge: Bridge | null = null;
beforeAll(async () => {
  t = await startTestGateway({ redisUrl: redis.get().server.url });
});
afterAll(async () => {
  await bridge?.stop();
  await t.close();
});

const series = () => `audience_gateway_layout_destinations{layout="${t.layoutId}"}`;
const shown = async () => sample(await scrape(t.gw.opsPort), series());

describe('the displays of each layout in use', () => {
  it('is absent for a layout no phone asked for, 0 once one does with no bridge, and counts the display a bridge registers', async () => {
    expect(await shown()).toBeNaN();
    // discovery (GET /layout) puts the layout in use
    expect((await fetch(`${t.url}/layout/${t.layoutId}`, { headers: { 'x-api-key': t.apiKey } })).status).toBe(200);
    expect(await shown()).toBe(0);
    ({ bridge } = await startTestBridge({ redisUrl: redis.get().server.url, prefix: t.config.redisPrefix, layouts: [{ layoutId: t.layoutId, targets: [{ host: '127.0.0.1', port: 9 }] }] }));
    await eventually(async () => (await shown()) === 1, 10_000);
    await bridge.stop();
    bridge = null;
    await eventually(async () => (await shown()) === 0, 15_000);
  }, 40_000);
});
