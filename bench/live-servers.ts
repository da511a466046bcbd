// What bench -- live loads with many sockets: the gateway (GATEWAY_WORKERS processes, a layout with an
// aggregated slider), or the floor beside it, as many bare uWebSockets.js processes on one port
// (bench/live-bare-uws.ts). Both switch pages and send crowd values at 4 Hz on request, so one
// measurement reads both.
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DEMO_LAYOUT_FILE } from '../schemas/demo-layout.js';
import { GATEWAY_NODE_FLAGS } from '../gateway/node-flags.js';
import { createStores } from '../gateway/store/stores.js';
import { createRedisClient } from '../runtime/redis.js';
import { freePort } from '../dev/redis-server.js';
import { spawnPinned, stopChild } from './harness.js';
import { mintTokens, seedDemo } from './audience.js';
import { BENCH_LIMITS } from './limits.js';

const MAIN = fileURLToPath(new URL('../gateway/main.js', import.meta.url));
const BARE = fileURLToPath(new URL('./live-bare-uws.js', import.meta.url));
/** The layout the live benches load: the demo layout, its Brightness slider aggregated (mean). */
export const BENCH_LAYOUT = 'live-bench';
const LAYOUT = BENCH_LAYOUT;

export interface LiveTarget {
  name: string;
  url: string;
  /** the processes that hold the sockets */
  pids: number[];
  tokens: string[];
  /** an API key of the target (the bare floor accepts any) */
  apiKey: string;
  /** switches the live page; resolves when the switch is made (`layout activate` returned) */
  switchTo(pageId: string): Promise<void>;
  /** starts crowd values changing; the returned function stops them */
  crowd(): () => Promise<void>;
  /** starts light looks for every phone, 10 a second; the returned function stops them */
  light(): () => Promise<void>;
  stop(): Promise<void>;
}

type DemoLayout = { layoutId: string; light?: object; pages: { pageId: string; controls: { lid: number; aggregate?: object }[] }[] };

/** The demo layout as `live-bench`, its Brightness slider aggregated (mean), with a light canvas (every phone as zone *). */
function benchLayout(): DemoLayout {
  const layout = JSON.parse(readFileSync(DEMO_LAYOUT_FILE, 'utf8')) as DemoLayout;
  layout.layoutId = LAYOUT;
  layout.pages[0]!.controls.find((c) => c.lid === 2)!.aggregate = { mode: 'mean', windowMs: 5000 };
  layout.light = {};
  return layout;
}

/** Light looks 10 times a second, each a new colour: `play` is told each one. */
function lightLooks(play: (look: { zone: string; color: string }, n: number) => Promise<unknown> | void): () => Promise<void> {
  let n = 0;
  const playing = new Set<Promise<unknown>>();
  const timer = setInterval(() => {
    const look = { zone: '*', color: `#${((n * 0x10101) & 0xffffff).toString(16).padStart(6, '0')}` };
    const p = Promise.resolve(play(look, n++)).catch((e: unknown) => process.stderr.write(`bench: a light look was not played: ${String(e)}\n`));
    playing.add(p);
    void p.finally(() => playing.delete(p));
  }, 100);
  return async () => {
    clearInterval(timer);
    await Promise.allSettled([...playing]);
  };
}

/** The gateway on `workers` processes; crowd values come from 8 participants moving the slider, 80 moves a second. */
/** The gateway as a target; `health`: a line on how its workers fared (replaced, and their silences). */
export async function gatewayTarget(redisUrl: string, workers: number, tokenCount = 1000): Promise<LiveTarget & { health(): Promise<string> }> {
  const key = await seedDemo(redisUrl, 'ac:', [benchLayout()]);
  const port = await freePort(); // below the ephemeral range, and free a moment ago
  const env = { ...BENCH_LIMITS, REDIS_URL: redisUrl, PORT: String(port), OPS_PORT: '0', LOG_LEVEL: 'info', GATEWAY_WORKERS: String(workers), LIVE_MAX_SOCKETS: '18000', LIVE_NEW_SOCKETS_PER_SECOND: '5000' };
  // with the V8 flags it ships with (its workers inherit them), as every other bench runs it
  const started = await spawnPinned('0-1', MAIN, [], env, /"opsPort":(\d+),"pids":\[([\d,]+)\].*workers listening/, [...GATEWAY_NODE_FLAGS]);
  const url = `http://127.0.0.1:${port}`;
  const admin = createRedisClient({ url: redisUrl }, { name: 'bench-admin', commandTimeoutMs: 5000, reconnectStepMs: 100, maxReconnectDelayMs: 100 });
  await admin.connect();
  const stores = createStores(admin, 'ac:');
  const tokens = await mintTokens(url, key.apiKey, LAYOUT, tokenCount);
  return {
    name: `gateway (${workers} workers)`,
    url,
    pids: started.match[2]!.split(',').map(Number),
    tokens,
    apiKey: key.apiKey,
    switchTo: (pageId) => stores.layouts.activate(LAYOUT, pageId).then(() => {}),
    crowd() {
      // open loop: 8 moves every 100 ms whatever the answers take, so a loaded gateway still sees the crowd move
      // a move that fails (a keep-alive connection the loaded gateway closed) is counted and said,
      // never an unhandled rejection that ends the bench and leaves its servers running
      const moves = new Set<Promise<unknown>>();
      let n = 0;
      let failed = 0;
      const timer = setInterval(() => {
        for (const token of tokens.slice(0, 8)) {
          const move = fetch(`${url}/action`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ layoutId: LAYOUT, lid: 2, type: 'Slider', value: (n++ % 101) / 100 }) })
            .then((r) => r.arrayBuffer())
            .catch(() => void failed++)
            .finally(() => moves.delete(move));
          moves.add(move);
        }
      }, 100);
      return async () => {
        clearInterval(timer);
        await Promise.allSettled([...moves]);
        if (failed > 0) process.stderr.write(`bench: ${failed} of ${n} slider moves failed (no answer from the gateway)\n`);
      };
    },
    // appended as audiencectl light does; every gateway process reads the stream and publishes each look to its sockets
    light: () => lightLooks((look) => stores.light.play(LAYOUT, look)),
    async health() {
      const text = await (await fetch(`http://127.0.0.1:${started.match[1]}/metrics`)).text();
      const value = (series: string) => Number(new RegExp(`^${series.replace(/[{}"]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
      const silences = value('audience_gateway_worker_silence_seconds_count');
      const over = (s: number) => silences - value(`audience_gateway_worker_silence_seconds_bucket{le="${s}"}`);
      return `gateway workers replaced: ${value('audience_gateway_worker_restarts_total')}; their silences (a heartbeat every 250 ms, killed after 2 s): ${over(0.5)} over 0.5 s, ${over(1)} over 1 s, ${over(1.5)} over 1.5 s`;
    },
    async stop() {
      admin.disconnect();
      await stopChild(started.child);
    },
  };
}

/** `processes` bare uWS processes on one port: page frames of the same layout; crowd values changing 80 times a second, each process sending the newest every 250 ms. */
export async function bareTarget(processes: number): Promise<LiveTarget> {
  const layout = benchLayout();
  let version = 1;
  const page = (pageId: string) => JSON.stringify({ op: 'page', layoutId: LAYOUT, activePageId: pageId, controls: layout.pages.find((p) => p.pageId === pageId)!.controls, destinationCount: 0, version: version++ });
  const port = await freePort(); // below the ephemeral range, and free a moment ago
  const children: ChildProcess[] = [];
  for (let i = 0; i < processes; i++) {
    const { child } = await spawnPinned('0-1', BARE, [String(port), page('main')], {}, /listening/, [], process.execPath, true);
    children.push(child);
  }
  const tell = (line: string) => {
    for (const c of children) c.stdin?.write(`${line}\n`);
  };
  return {
    name: `bare uWS (${processes} processes)`,
    url: `http://127.0.0.1:${port}`,
    pids: children.map((c) => c.pid!),
    tokens: ['bare'],
    apiKey: 'bare',
    switchTo: (pageId) => Promise.resolve(tell(`publish ${page(pageId)}`)),
    crowd() {
      // the value changes 80 times a second, as the gateway's slider moves; each bare process sends the newest 4 times a second
      let n = 0;
      const timer = setInterval(() => tell(`crowd ${JSON.stringify({ op: 'crowd', lid: 2, mode: 'mean', value: (n++ % 100) / 100, n: 8, sd: 0.1 })}`), 12.5);
      return () => Promise.resolve(clearInterval(timer));
    },
    // the frame as the gateway sends it, published to every socket at once (uWS, in C++)
    light: () => lightLooks((look, n) => tell(`publish ${JSON.stringify({ op: 'light', id: `${Date.now()}-${n}`, ...look, at: Date.now() + 150 })}`)),
    async stop() {
      await Promise.all(children.map(stopChild));
    },
  };
}
