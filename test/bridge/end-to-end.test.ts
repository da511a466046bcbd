// From POST /action to the bytes a display receives, through a real gateway, Redis and bridge.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bridge } from '../../bridge/app.js';
import { eventually, mintToken, postAction, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startTestBridge } from '../helpers/bridge.js';
import { useRedis } from '../helpers/redis.js';
import { oscMinEncode } from '../helpers/osc-oracle.js';
import { UdpSink } from '../helpers/udp-sink.js';

const redis = useRedis();
let t: TestGateway;
let token: string;
let bridge: Bridge;
const intSink = new UdpSink();
const tfSink = new UdpSink();

beforeAll(async () => {
  t = await startTestGateway({ redisUrl: redis.get().server.url });
  token = await mintToken(t, t.layoutId, t.apiKey);
  await intSink.start();
  await tfSink.start();
  ({ bridge } = await startTestBridge({
    redisUrl: redis.get().server.url,
    prefix: t.config.redisPrefix,
    layouts: [{ layoutId: t.layoutId, targets: [{ host: '127.0.0.1', port: intSink.port }, { host: '127.0.0.1', port: tfSink.port, booleans: 'TF' }] }],
  }));
});
afterAll(async () => {
  await bridge.stop();
  await t.close();
  await intSink.stop();
  await tfSink.stop();
});

describe('every control type, end to end', () => {
  it.each([
    ['Button', 1, undefined],
    ['Slider', 2, 0.75],
    ['Toggle', 3, true],
    ['Toggle', 3, false],
    ['Index', 4, 2],
    ['String', 5, 'go team ✨'],
    ['XYPad', 6, [0.2, 0.9]],
  ] as const)('%s %j reaches both displays as the mapped OSC bytes', async (type, lid, value) => {
    const before = [intSink.messages.length, tfSink.messages.length] as const;
    const r = await postAction(t, token, { layoutId: t.layoutId, lid, type, ...(value !== undefined && { value }) });
    expect(r.status).toBe(200);
    await eventually(() => intSink.messages.length > before[0] && tfSink.messages.length > before[1]);
    const address = `/00${lid}`;
    const entry = { address, type, value: (value ?? null) as never };
    const got = intSink.messages[before[0]]!;
    expect(got.address).toBe(address);
    expect(got.raw.equals(oscMinEncode(entry, 'int'))).toBe(true);
    expect(tfSink.messages[before[1]]!.raw.equals(oscMinEncode(entry, 'TF'))).toBe(true);
    expect(got.timetag).toEqual([0, 1]); // playoutDelayMs 0: immediately
  });

  it('counts what it sent: entries once (when confirmed, a tick after sending), messages per target', async () => {
    const c = bridge.counters;
    await eventually(() => c.total('sent') === 7);
    expect(c.target(`127.0.0.1:${intSink.port}`).messages).toBe(c.total('sent'));
    expect(c.target(`127.0.0.1:${tfSink.port}`).messages).toBe(c.total('sent'));
    expect(c.target(`127.0.0.1:${intSink.port}`).bytes).toBeGreaterThan(0);
  });

  it('reports the layout’s displays as destinationCount', async () => {
    await eventually(async () => (await fetch(`${t.url}/layout/${t.layoutId}`, { headers: { 'x-api-key': t.apiKey } }).then((r) => r.json() as Promise<{ destinationCount: number }>)).destinationCount === 2);
  });
});

describe('playout delay', () => {
  it('timetags bundles with the gateway receive time plus playoutDelayMs', async () => {
    const sink = new UdpSink();
    await sink.start();
    const { bridge: delayed } = await startTestBridge({
      redisUrl: redis.get().server.url,
      prefix: t.config.redisPrefix,
      bridgeId: 'delayed',
      layouts: [{ layoutId: t.layoutId, playoutDelayMs: 250, targets: [{ host: '127.0.0.1', port: sink.port }] }],
    });
    try {
      await postAction(t, token, { layoutId: t.layoutId, lid: 1, type: 'Button' });
      const entries = await redis.get().client.xrevrange(`${t.config.redisPrefix}layout:{${t.layoutId}}:actions`, '+', '-', 'COUNT', 1);
      const ts = (JSON.parse(entries[0]![1][1]!) as { ts: number }).ts;
      // A new bridge also delivers the fresh actions of the tests before (its group starts maxAgeMs
      // back): this one is the newest. Its timetag is in the bridge host's clock, corrected by the
      // offset it measured to Redis's (0 here, within the accuracy it states).
      const ms = (tag: readonly [number, number] | null) => (tag ? (tag[0] - 2_208_988_800) * 1000 + (tag[1] / 2 ** 32) * 1000 : NaN);
      const slack = () => delayed.clock().accuracyMs + 1;
      await eventually(() => sink.messages.length > 0 && Math.abs(ms(sink.messages.at(-1)!.timetag) - (ts + 250)) <= slack());
      expect(Math.abs(ms(sink.messages.at(-1)!.timetag) - (ts + 250))).toBeLessThanOrEqual(slack());
    } finally {
      await delayed.stop();
      await sink.stop();
    }
  });
});
