// End to end: actions sent over HTTP at a steady open-loop rate, through Redis and a real bridge
// process, to the first datagram at a UDP sink. Gateway on core 0 (started by the caller); the
// bridge, Redis, the generator and the sink on core 1. The latency of one Button press is the
// sink's clock at arrival minus the bundle's timetag less the 1 ms playout delay, i.e. the
// gateway's receive time (`ts`): both read Date.now(), so figures are whole milliseconds.
import { createSocket } from 'node:dgram';
import { fileURLToPath } from 'node:url';
import { fromBuffer, timetagToDate } from 'osc-min';
import { actionRequests, percentiles, spawnPinned, stopChild, type LoadResult, type Percentiles } from './harness.js';
import { openLoop } from './open-loop.js';

export const BRIDGE = fileURLToPath(new URL('../bridge/main.js', import.meta.url));

export interface EndToEnd extends Percentiles {
  /** actions answered 200 */
  accepted: number;
  /** measured presses that reached the sink */
  received: number;
  /** the generator's view of the HTTP requests */
  http: LoadResult;
}

export async function measureEndToEnd(o: { url: string; tokens: string[]; redisUrl: string; tickHz: number; rate: number; bridge?: string; core?: number }): Promise<EndToEnd> {
  const latencies: number[] = [];
  const sink = createSocket('udp4');
  sink.on('message', (d) => {
    const now = Date.now(); // the same clock the gateway stamps `ts` with
    const walk = (p: ReturnType<typeof fromBuffer>): void => {
      if (p.oscType !== 'bundle') return;
      for (const e of p.elements) {
        if (e.oscType === 'bundle') walk(e);
        // only the measured Buttons (/001); the warm-up sends Sliders (/002)
        else if (e.address === '/001') latencies.push(now - (timetagToDate(p.timetag).getTime() - 1));
      }
    };
    walk(fromBuffer(d));
  });
  await new Promise<void>((r) => sink.bind(0, '127.0.0.1', r));
  const args = ['--layout', 'demo-show', '--target', `127.0.0.1:${sink.address().port}`, '--redis', o.redisUrl, '--bridge-id', `e2e-${o.tickHz}-${o.rate}-${Date.now()}`, '--tick-hz', String(o.tickHz), '--playout-delay-ms', '1', '--ops-port', '0'];
  const bridge = await spawnPinned(o.core ?? 1, o.bridge ?? BRIDGE, args, { LOG_LEVEL: 'info' }, /audience-bridge running/);
  try {
    // 2 s at the same rate first, so neither process is measured while its code is still being compiled.
    const warmUp = actionRequests(o.tokens, 'demo-show', 10_000, (i) => ({ lid: 2, type: 'Slider', value: (i % 100) / 100 }));
    await openLoop({ name: 'e2e warm-up', url: o.url, rate: o.rate, durationSec: 2, connections: 50, requests: warmUp });
    const requests = actionRequests(o.tokens, 'demo-show', 10_000, () => ({ lid: 1, type: 'Button' }));
    const http = await openLoop({ name: 'e2e', url: o.url, rate: o.rate, durationSec: 5, connections: 50, requests });
    await new Promise((res) => setTimeout(res, 1000));
    return { ...percentiles(latencies.sort((a, b) => a - b)), accepted: http.total - http.non2xx, received: latencies.length, http };
  } finally {
    await stopChild(bridge.child);
    sink.close();
  }
}
