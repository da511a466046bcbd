// The live channel's costs, measured side by side in one run on this machine.
//  1. An action over a socket against POST /action: the gateway pinned to core 0, Redis and the
//     load on core 1; gateway CPU µs per answered action (as bench:action measures it).
//  2. Many sockets (default 50,000) on GATEWAY_WORKERS gateway processes (each holds at most
//     LIVE_MAX_SOCKETS; a process may open 20,000 files) from generator processes on loopback source
//     addresses 127.0.0.2, .3, ... (one address reaches about 28,000 connections to one port):
//     memory per socket and idle CPU per process, how long a page switch takes to reach every
//     socket after `layout activate` returns, and what crowd frames at 4 Hz to every socket cost.
//   npm run bench:live [-- --seconds 10 --sockets 50000 --workers 4 --per-generator 10000]
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { createRedisClient } from '../runtime/redis.js';
import { DEMO_LAYOUT_FILE } from '../gateway/demo/seed.js';
import { createStores } from '../gateway/store/stores.js';
import { actionRequests, cpuSeconds, mintTokens, percentiles, pinProcess, pinnedRedis, rssMiB, seedDemo, spawnPinned, spawnPinnedGateway, stopChild, wrkLoad } from './harness.js';
import { BENCH_LIMITS } from './limits.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '10' }, sockets: { type: 'string', default: '50000' }, workers: { type: 'string', default: '4' }, 'per-generator': { type: 'string', default: '10000' }, connections: { type: 'string', default: '100' } } });
const seconds = Number(values.seconds);
const socketCount = Number(values.sockets);
const workers = Number(values.workers);
const perGenerator = Number(values['per-generator']);
const connections = Number(values.connections);
const GENERATOR = fileURLToPath(new URL('./live-sockets.js', import.meta.url));
const MAIN = fileURLToPath(new URL('../gateway/main.js', import.meta.url));
const LAYOUT = 'live-bench';
const progress = (what: string) => process.stderr.write(`bench: ${what}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const wsUrl = (http: string) => `${http.replace(/^http/, 'ws')}/live`;

/** Gateway CPU µs per action sent over `connections` sockets, each keeping `window` actions in flight, for `seconds`. */
async function socketActions(url: string, pid: number, tokens: string[], bodies: object[]): Promise<{ perSecond: number; usPerAction: number; cpuShare: number }> {
  const sockets = await Promise.all(
    Array.from({ length: connections }, (_, i) => new Promise<WebSocket>((resolve) => {
      const ws = new WebSocket(wsUrl(url), ['audience-control.v1', `bearer.${tokens[i % tokens.length]}`], { perMessageDeflate: false });
      ws.once('message', () => resolve(ws)); // its page
    })),
  );
  let acked = 0;
  let sent = 0;
  let stop = false;
  const window = 8;
  const frames = bodies.map((b, i) => JSON.stringify({ op: 'action', ref: String(i), ...b }));
  const cpu0 = cpuSeconds(pid);
  const t0 = performance.now();
  for (const ws of sockets) {
    ws.on('message', (data: Buffer) => {
      if (data[7] !== 0x61 && data[7] !== 0x65) return; // {"op":"ack" or {"op":"error": an answer
      if (data[7] === 0x61) acked++;
      if (!stop) ws.send(frames[sent++ % frames.length]!);
    });
    for (let k = 0; k < window; k++) ws.send(frames[sent++ % frames.length]!);
  }
  await sleep(seconds * 1000);
  stop = true;
  const elapsed = (performance.now() - t0) / 1000;
  const cpu = cpuSeconds(pid) - cpu0;
  for (const ws of sockets) ws.terminate();
  return { perSecond: acked / elapsed, usPerAction: (cpu * 1e6) / acked, cpuShare: cpu / elapsed };
}

/** Part 1: µs of gateway CPU per action, POST /action and over a socket, one gateway, one run. */
async function actionCost(): Promise<string> {
  await pinProcess(1);
  const redis = await pinnedRedis(1);
  try {
    const key = await seedDemo(redis.url);
    const gw = await spawnPinnedGateway(redis.url);
    const tokens = await mintTokens(gw.url, key.apiKey, key.layoutId, 2000);
    const requests = actionRequests(tokens, key.layoutId);
    progress(`POST /action, ${seconds} s`);
    const http = await wrkLoad({ name: 'POST /action', url: gw.url, connections, durationSec: seconds, serverPid: gw.child.pid!, requests });
    progress(`actions over ${connections} sockets, ${seconds} s`);
    const bodies = requests.map((r) => {
      const { layoutId: _, ...b } = JSON.parse(r.body!) as Record<string, unknown>;
      return b;
    });
    const ws = await socketActions(gw.url, gw.child.pid!, tokens, bodies);
    await stopChild(gw.child);
    const ratio = ws.usPerAction / http.serverCpuUsPerRequest!;
    return [
      '| path | actions/s | gateway CPU (share of a core) | gateway CPU µs/action |',
      '|---|---|---|---|',
      `| POST /action (wrk, ${connections} connections) | ${Math.round(http.requestsPerSec)} | ${http.serverCpuShare!.toFixed(2)} | ${http.serverCpuUsPerRequest!.toFixed(1)} |`,
      `| action frame over the live channel (${connections} sockets, 8 in flight each) | ${Math.round(ws.perSecond)} | ${ws.cpuShare.toFixed(2)} | ${ws.usPerAction.toFixed(1)} |`,
      '',
      `socket / POST: ${ratio.toFixed(2)} of the CPU per action (target: at most 0.33)`,
    ].join('\n');
  } finally {
    await redis.stop();
  }
}

interface Generator {
  child: ChildProcess;
  next: () => Promise<Record<string, unknown>>;
}

function startGenerator(url: string, tokensFile: string, count: number, address: string): Generator {
  const child = spawn(process.execPath, ['--max-old-space-size=4096', GENERATOR, wsUrl(url), tokensFile, String(count), address], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  createInterface({ input: child.stdout }).on('line', (line) => (waiting.length > 0 ? waiting.shift()!(line) : lines.push(line)));
  const parse = (line: string) => JSON.parse(line) as Record<string, unknown>;
  return { child, next: () => new Promise((r) => (lines.length > 0 ? r(parse(lines.shift()!)) : waiting.push((l) => r(parse(l))))) };
}

/** Part 2: many sockets over worker processes. */
async function manySockets(): Promise<string> {
  const redis = await pinnedRedis(1);
  const generators: Generator[] = [];
  let gateway: ChildProcess | undefined;
  try {
    const demo = JSON.parse(readFileSync(DEMO_LAYOUT_FILE, 'utf8')) as { pages: { controls: { lid: number; aggregate?: object }[] }[] };
    const layout = structuredClone(demo) as typeof demo & { layoutId: string };
    layout.layoutId = LAYOUT;
    layout.pages[0]!.controls.find((c) => c.lid === 2)!.aggregate = { mode: 'mean', windowMs: 5000 };
    const key = await seedDemo(redis.url, 'ac:', [layout]);
    const port = 20000 + Math.floor(Math.random() * 20000);
    const env = { ...BENCH_LIMITS, REDIS_URL: redis.url, PORT: String(port), OPS_PORT: '0', LOG_LEVEL: 'warn', GATEWAY_WORKERS: String(workers), LIVE_MAX_SOCKETS: '18000', LIVE_NEW_SOCKETS_PER_SECOND: '5000' };
    const started = await spawnPinned('0-1', MAIN, [], { ...env, LOG_LEVEL: 'info' }, /"pids":\[([\d,]+)\].*workers listening/);
    gateway = started.child;
    const pids = started.match[1]!.split(',').map(Number);
    const url = `http://127.0.0.1:${port}`;
    const tokens = await mintTokens(url, key.apiKey, LAYOUT, 1000);
    const tokensFile = join(mkdtempSync(join(tmpdir(), 'bench-live-')), 'tokens.json');
    writeFileSync(tokensFile, JSON.stringify(tokens));
    const rss0 = pids.map(rssMiB);
    progress(`opening ${socketCount} sockets on ${workers} workers`);
    const t0 = Date.now();
    for (let g = 0, left = socketCount; left > 0; g++, left -= perGenerator) generators.push(startGenerator(url, tokensFile, Math.min(perGenerator, left), `127.0.0.${2 + g}`));
    const opened = await Promise.all(generators.map((g) => g.next()));
    const openSeconds = (Date.now() - t0) / 1000;
    const served = opened.reduce((n, o) => n + Number(o.opened), 0);
    await sleep(3000); // settle: garbage collected, buffers returned
    const rss1 = pids.map(rssMiB);
    const kbPerSocket = ((rss1.reduce((a, b) => a + b, 0) - rss0.reduce((a, b) => a + b, 0)) * 1024) / served;
    progress(`idle ${seconds} s`);
    const idle0 = pids.map(cpuSeconds);
    await sleep(seconds * 1000);
    const idleShare = pids.map((p, i) => (cpuSeconds(p) - idle0[i]!) / seconds);
    // page switches, each timed from the moment `activate` returns
    const admin = createRedisClient({ url: redis.url }, { name: 'bench-admin', commandTimeoutMs: 5000, reconnectStepMs: 100, maxReconnectDelayMs: 100 });
    await admin.connect();
    const stores = createStores(admin, 'ac:');
    const switchLatencies: number[] = [];
    const switchRows: string[] = [];
    for (const [i, pageId] of ['encore', 'main', 'encore', 'main', 'encore'].entries()) {
      for (const g of generators) g.child.stdin!.write('report none\n'); // start clean
      await Promise.all(generators.map((g) => g.next()));
      await stores.layouts.activate(LAYOUT, pageId);
      const at = Date.now();
      await sleep(3000);
      for (const g of generators) g.child.stdin!.write(`report ${pageId}\n`);
      const arrivals = (await Promise.all(generators.map((g) => g.next()))).flatMap((r) => r.arrivals as number[]);
      const latencies = arrivals.map((t) => t - at).sort((a, b) => a - b);
      switchLatencies.push(...latencies);
      const p = percentiles(latencies);
      switchRows.push(`| ${i + 1} | ${latencies.length} of ${served} | ${p.p50} | ${p.p99} | ${p.max} |`);
    }
    // crowd values at 4 Hz: a few participants keep moving the aggregated slider
    progress(`crowd at 4 Hz, ${seconds} s`);
    await stores.layouts.activate(LAYOUT, 'main');
    await sleep(2000);
    for (const g of generators) g.child.stdin!.write('report none\n');
    await Promise.all(generators.map((g) => g.next()));
    const movers = tokens.slice(0, 8);
    let moving = true;
    const moves = (async () => {
      while (moving) {
        await Promise.all(movers.map((token) => fetch(`${url}/action`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ layoutId: LAYOUT, lid: 2, type: 'Slider', value: Math.round(Math.random() * 100) / 100 }) })));
        await sleep(100);
      }
    })();
    const crowd0 = pids.map(cpuSeconds);
    await sleep(seconds * 1000);
    const crowdCores = pids.reduce((n, p, i) => n + (cpuSeconds(p) - crowd0[i]!) / seconds, 0) - idleShare.reduce((a, b) => a + b, 0);
    moving = false;
    await moves;
    for (const g of generators) g.child.stdin!.write('report none\n');
    const crowdFrames = (await Promise.all(generators.map((g) => g.next()))).reduce((n, r) => n + Number(r.crowd), 0);
    admin.disconnect();
    const all = percentiles(switchLatencies.sort((a, b) => a - b));
    return [
      `${served} sockets open (${opened.reduce((n, o) => n + Number(o.failed), 0)} failed) on ${workers} gateway workers from ${generators.length} generator processes in ${openSeconds.toFixed(1)} s`,
      '',
      '| per gateway process | figure |',
      '|---|---|',
      `| memory per socket (RSS growth / sockets) | ${kbPerSocket.toFixed(1)} KB |`,
      `| idle CPU, each worker (share of a core) | ${idleShare.map((x) => (x * 100).toFixed(1)).join(' %, ')} % |`,
      '',
      '| page switch | page frames received | p50 ms | p99 ms | max ms |',
      '|---|---|---|---|---|',
      ...switchRows,
      `| all | ${switchLatencies.length} | ${all.p50} | ${all.p99} | ${all.max} |`,
      '',
      `crowd frames at 4 Hz to every socket: ${(crowdFrames / served / seconds).toFixed(2)} frames a second per socket, ${crowdCores.toFixed(2)} cores over idle for all workers (the 80 slider moves a second that drive it included)`,
    ].join('\n');
  } finally {
    for (const g of generators) g.child.kill('SIGKILL');
    if (gateway) await stopChild(gateway);
    await redis.stop();
  }
}

async function main(): Promise<void> {
  const machine = `machine: ${cpus().length} cores (shared), Node ${process.version}; ${seconds} s per measurement`;
  const first = await actionCost();
  process.stdout.write(`\n${machine}\n\n${first}\n\n`);
  await pinProcess('0-1');
  const second = await manySockets();
  process.stdout.write(`${second}\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(`bench: ${String(e)}\n`);
  process.exit(1);
});
