// End to end: actions sent over HTTP at a steady open-loop rate, through Redis and a real bridge
// process, to the first datagram at a UDP sink. Gateway on core 0 (started by the caller); the
// bridge, Redis, the generator and the sink on core 1. The latency of one Button press is the
// sink's clock at arrival minus the bundle's timetag less the 1 ms playout delay, i.e. the
// gateway's receive time (`ts`): both read Date.now(), so figures are whole milliseconds.
import { createSocket } from 'node:dgram';
import { fileURLToPath } from 'node:url';
import { fromBuffer, timetagToDate, type OscPacketOutput } from 'osc-min';
import { BRIDGE_NODE_FLAGS } from '../bridge/node-flags.js';
import { percentiles, spawnPinned, stopChild, type LoadResult, type Percentiles } from './harness.js';
import { actionRequests } from './audience.js';
import { openLoop } from './open-loop.js';

export const BRIDGE = fileURLToPath(new URL('../bridge/main.js', import.meta.url));

/** A bridge process for one layout on core 1 (or `core`), sending to a sink on this host. */
export function spawnBenchBridge(o: { redisUrl: string; layoutId: string; port: number; tickHz: number; id: string; bridge?: string; core?: number; extraArgs?: string[] }) {
  const args = ['--layout', o.layoutId, '--target', `127.0.0.1:${o.port}`, '--redis', o.redisUrl, '--bridge-id', o.id, '--tick-hz', String(o.tickHz), '--ops-port', '0', ...(o.extraArgs ?? [])];
  return spawnPinned(o.core ?? 1, o.bridge ?? BRIDGE, args, { LOG_LEVEL: 'info' }, /audience-bridge running/, [...BRIDGE_NODE_FLAGS]);
}

/** A UDP sink that decodes OSC: `onMessage` gets each message, its arrival time (Date.now) and its bundle's timetag (ms). */
export async function oscSink(onMessage: (address: string, args: number[], at: number, timetagMs: number) => void): Promise<{ port: number; close: () => void }> {
  const socket = createSocket('udp4');
  socket.on('message', (d) => {
    const at = Date.now();
    const walk = (p: OscPacketOutput, tag: number): void => {
      if (p.oscType === 'bundle') p.elements.forEach((e) => walk(e, timetagToDate(p.timetag).getTime()));
      else onMessage(p.address, p.args.map((a) => Number((a as { value: unknown }).value)), at, tag);
    };
    walk(fromBuffer(d), NaN);
  });
  await new Promise<void>((r) => socket.bind(0, '127.0.0.1', r));
  return { port: socket.address().port, close: () => socket.close() };
}

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
  let measuredFrom = Infinity;
  // only the measured Buttons (/001) accepted from the measured phase on: the warm-up sends Sliders
  // (/002), and a new bridge's group starts maxAgeMs back, so it also delivers what the phase before
  // this one sent. `ts` = timetag − the 1 ms playout delay.
  const sink = await oscSink((address, _args, at, timetagMs) => {
    const ts = timetagMs - 1;
    if (address === '/001' && ts >= measuredFrom) latencies.push(at - ts);
  });
  const bridge = await spawnBenchBridge({ redisUrl: o.redisUrl, layoutId: 'demo-show', port: sink.port, tickHz: o.tickHz, id: `e2e-${o.tickHz}-${o.rate}-${Date.now()}`, bridge: o.bridge, core: o.core, extraArgs: ['--playout-delay-ms', '1'] });
  try {
    // 2 s at the same rate first, so neither process is measured while its code is still being compiled.
    const warmUp = actionRequests(o.tokens, 'demo-show', 10_000, (i) => ({ lid: 2, type: 'Slider', value: (i % 100) / 100 }));
    await openLoop({ name: 'e2e warm-up', url: o.url, rate: o.rate, durationSec: 2, connections: 50, requests: warmUp });
    const requests = actionRequests(o.tokens, 'demo-show', 10_000, () => ({ lid: 1, type: 'Button' }));
    measuredFrom = Date.now();
    const http = await openLoop({ name: 'e2e', url: o.url, rate: o.rate, durationSec: 5, connections: 50, requests });
    await new Promise((res) => setTimeout(res, 1000));
    return { ...percentiles(latencies.sort((a, b) => a - b)), accepted: http.total - http.non2xx, received: latencies.length, http };
  } finally {
    await stopChild(bridge.child);
    sink.close();
  }
}
