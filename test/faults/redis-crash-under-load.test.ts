// Redis killed (-9) and restarted while actions pour in: the gateway answers 503 within 1 s during
// the outage, recovers by itself within 2 s, every action that got a 200 is in the stream
// afterwards, and the bridge reconnects and delivers them. Redis runs with `appendfsync always`
// (it answers a write once the write is in its AOF), its files in memory, so no other program's
// disk writes slow its fsyncs; redis-slow-disk.test.ts kills it on a slow disk.
import { describe, expect, it } from 'vitest';
import { startTestBridge } from '../helpers/bridge.js';
import { recordFigure } from '../helpers/figures.js';
import { eventually, postAction, useGatewayWithToken } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';
import { UdpSink } from '../helpers/udp-sink.js';

const redis = useRedis(['--appendfsync', 'always'], '/dev/shm');
const g = useGatewayWithToken(() => redis.get().server.url);

describe('Redis crash under load', () => {
  it('never confirms an action it lost, answers 503 fast, and recovers', async () => {
    const sink = new UdpSink();
    await sink.start();
    const { bridge } = await startTestBridge({ redisUrl: redis.get().server.url, prefix: g.t.config.redisPrefix, layouts: [{ layoutId: g.t.layoutId, maxAgeMs: 30_000, targets: [{ host: '127.0.0.1', port: sink.port }] }] });
    const accepted: string[] = [];
    const outageAnswers: number[] = [];
    let down = false;
    let restartedAt = 0;
    let firstOkAfterRestart = 0;
    let seq = 0;
    let running = true;
    const client = async () => {
      while (running) {
        const value = `a${seq++}`;
        const started = performance.now();
        const r = await postAction(g.t, g.token, { layoutId: g.t.layoutId, lid: 5, type: 'String', value }).catch(() => null);
        const ms = performance.now() - started;
        if (r?.status === 200) {
          accepted.push(value);
          if (restartedAt && !firstOkAfterRestart) firstOkAfterRestart = performance.now();
        } else if (down) outageAnswers.push(r?.status === 503 ? ms : Infinity);
      }
    };
    const clients = Array.from({ length: 8 }, client);
    await new Promise((r) => setTimeout(r, 400));
    down = true;
    await redis.get().server.kill();
    await new Promise((r) => setTimeout(r, 1000));
    down = false;
    await redis.get().server.restart();
    restartedAt = performance.now();
    await eventually(() => firstOkAfterRestart > 0);
    await new Promise((r) => setTimeout(r, 300));
    running = false;
    await Promise.all(clients);

    expect(outageAnswers.length).toBeGreaterThan(0);
    const slowest = Math.max(...outageAnswers);
    expect(slowest).toBeLessThan(1000); // every answer during the outage was a 503 within 1 s
    const recovery = firstOkAfterRestart - restartedAt;
    expect(recovery).toBeLessThan(2000);
    recordFigure('redis_outage_slowest_503_ms', slowest, 'ms', '< 1000');
    recordFigure('redis_recovery_ms', recovery, 'ms', '< 2000');
    recordFigure('redis_outage_accepted_actions', accepted.length, 'actions', 'all in the stream');

    const entries = await redis.get().client.xrange(`${g.t.config.redisPrefix}layout:{${g.t.layoutId}}:actions`, '-', '+');
    const inStream = new Set(entries.map(([, f]) => (JSON.parse(f[1]!) as { value: string }).value));
    expect(accepted.filter((v) => !inStream.has(v))).toEqual([]); // no 200 without its entry
    // the bridge reconnected and caught up on everything accepted
    await eventually(() => accepted.every((v) => sink.messages.some((m) => m.args[0]!.value === v)), 10_000);
    await bridge.stop();
    await sink.stop();
  });
});
