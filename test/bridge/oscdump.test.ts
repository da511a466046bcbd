// An independent OSC implementation (liblo's oscdump, from Debian) decodes what the bridge sends.
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bridge } from '../../bridge/app.js';
import { timetag } from '../../bridge/osc.js';
import { freePort } from '../../dev/redis-server.js';
import { startTestBridge } from '../helpers/bridge.js';
import { eventually, mintToken, postAction, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
let t: TestGateway;
let token: string;
let bridge: Bridge;
let oscdump: ChildProcess;
let out = '';

beforeAll(async () => {
  t = await startTestGateway({ redisUrl: redis.get().server.url });
  token = await mintToken(t, t.layoutId, t.apiKey);
  const port = await freePort();
  oscdump = spawn('oscdump', ['-L', String(port)]);
  oscdump.stdout!.on('data', (d) => (out += d));
  await new Promise((r) => setTimeout(r, 300));
  ({ bridge } = await startTestBridge({
    redisUrl: redis.get().server.url,
    prefix: t.config.redisPrefix,
    layouts: [{ layoutId: t.layoutId, playoutDelayMs: 200, targets: [{ host: '127.0.0.1', port, booleans: 'TF' }] }],
  }));
});
afterAll(async () => {
  await bridge.stop();
  oscdump.kill();
  await t.close();
});

describe('oscdump (liblo) reads the bridge', () => {
  it('decodes every control type with the expected OSC types and values', async () => {
    const sends: [number, string, unknown][] = [
      [1, 'Button', undefined],
      [2, 'Slider', 0.75],
      [3, 'Toggle', true],
      [3, 'Toggle', false],
      [4, 'Index', 2],
      [5, 'String', 'go team'],
      [6, 'XYPad', [0.25, 1]],
    ];
    for (const [lid, type, value] of sends) expect((await postAction(t, token, { layoutId: t.layoutId, lid, type, ...(value !== undefined && { value }) })).status).toBe(200);
    await eventually(() => out.trim().split('\n').length >= sends.length);
    const lines = out.trim().split('\n').map((l) => l.replace(/^[0-9a-f]{8}\.[0-9a-f]{8} /, ''));
    expect(lines).toEqual(['/001 i 1', '/002 f 0.750000', '/003 T #T', '/003 F #F', '/004 i 2', '/005 s "go team"', '/006 ff 0.250000 1.000000']);
  });

  it('sees the bundle timetag: gateway receive time + playoutDelayMs', async () => {
    out = '';
    await postAction(t, token, { layoutId: t.layoutId, lid: 1, type: 'Button' });
    await eventually(() => out.includes('/001'));
    const entries = await redis.get().client.xrevrange(`${t.config.redisPrefix}layout:{${t.layoutId}}:actions`, '+', '-', 'COUNT', 1);
    const ts = (JSON.parse(entries[0]![1][1]!) as { ts: number }).ts;
    const [seconds, fraction] = timetag(ts + 200);
    const printed = /^([0-9a-f]{8})\.([0-9a-f]{8}) \/001/m.exec(out)!;
    expect(parseInt(printed[1]!, 16)).toBe(seconds);
    expect(Math.abs(parseInt(printed[2]!, 16) - fraction)).toBeLessThan(2 ** 32 / 1000); // within 1 ms
  });
});
