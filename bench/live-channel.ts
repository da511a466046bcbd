// The live channel's costs, measured side by side in one run on this machine.
//  1. An action over a socket against POST /action: the gateway pinned to core 0, Redis and the
//     load on core 1; gateway CPU µs per answered action (as the action probe, now in git history, measured it). The
//     socket action is judged against the storing floor (bare uWS that appends each frame to a
//     Redis stream before its ack, bench/live-bare-store.ts), and reported against the bare ack.
//  2. Many sockets (default 50,000) on GATEWAY_WORKERS gateway processes (each holds at most
//     LIVE_MAX_SOCKETS; a process may open 20,000 files) and as many on bare uWS, held at once
//     (live-many-sockets.ts): memory per socket and idle CPU per process, how long a page switch
//     takes to reach every socket after `layout activate` returns (the two targets in turn), what
//     crowd frames at 4 Hz to every socket cost, and light frames at 10 a second (CPU per frame
//     delivered, and each frame's spread of arrivals across the sockets).
//   npm run bench -- live [--seconds 10 --sockets 50000 --workers 4 --per-generator 10000 --window 8 --rate 0 --controls plain|aggregated --only action|sockets|gateway-sockets]
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { medianBy, pinProcess, pinnedRedis, spawnPinned, spawnPinnedGateway, stopChild, wrkLoad } from './harness.js';
import { actionRequests, mintTokens, seedDemo } from './audience.js';
import { socketActions, type SocketLoad } from './live-action-load.js';
import { ACTION_PATH, actionTable } from './live-figures.js';
import { HeldSockets, measureSockets, type SocketFigures } from './live-many-sockets.js';
import { bareTarget, gatewayTarget } from './live-servers.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '10' }, sockets: { type: 'string', default: '50000' }, workers: { type: 'string', default: '4' }, 'per-generator': { type: 'string', default: '10000' }, connections: { type: 'string', default: '100' }, window: { type: 'string', default: '8' }, controls: { type: 'string', default: 'plain' }, rate: { type: 'string', default: '0' }, only: { type: 'string' } } });
const seconds = Number(values.seconds);
const socketCount = Number(values.sockets);
const workers = Number(values.workers);
const perGenerator = Number(values['per-generator']);
const connections = Number(values.connections);
/** actions each socket keeps in flight in the action rounds */
const inFlight = Number(values.window);
/** actions a second sent over all sockets at an even pace in the action rounds, `--window` frames a write (0: each socket keeps `--window` in flight) */
const rate = Number(values.rate);
/** which of the demo's controls the action rounds press: the plain ones (each action an entry in Redis) or the aggregated ones (folded in memory) */
const controls = values.controls === 'aggregated' ? 'aggregated' : 'plain';
const BARE_HTTP = fileURLToPath(new URL('./bare-uws.js', import.meta.url));
const BARE_LIVE = fileURLToPath(new URL('./live-bare-uws.js', import.meta.url));
const progress = (what: string) => process.stderr.write(`bench: ${what}\n`);
const ROUNDS = 3;
/** page switches on each target, alternating between them (odd: the median is one pair's) */
const SWITCHES = 9;

/** The live channel's targets, as ratios of the gateway to bare uWebSockets.js measured in the same run. */
const TARGETS = {
  /**
   * CPU per action over a socket, against the storing floor: the bare ack that appends each frame
   * to a Redis stream before acking it (the gateway must store each action before its ack; the
   * bare ack stores nothing, and its ratio is reported beside this one)
   */
  socketAction: 1.25,
  /** p99 of a page switch reaching every socket */
  pageSwitchP99: 1.1,
  /** CPU per crowd frame delivered */
  crowdFrameCpu: 1.25,
  /** crowd frames a socket receives a second at 4 Hz (at least) */
  crowdFrameRate: 0.9,
  /** CPU per light frame delivered (10 a second to every socket) */
  lightFrameCpu: 1.25,
  /** memory per socket (KB, absolute) and idle CPU per process (share of a core, absolute) */
  socketKb: 10,
  idleShare: 0.05,
} as const;

/** One line: a figure beside its target, and whether it is met. */
function target(what: string, value: number, op: '<=' | '>=' | '<', bound: number, detail = ''): string {
  const met = op === '<=' ? value <= bound : op === '>=' ? value >= bound : value < bound;
  return `${what}: ${value.toFixed(2)} (target ${op === '<=' ? '≤' : op === '>=' ? '≥' : '<'} ${bound}: ${met ? 'met' : 'NOT met'})${detail ? `; ${detail}` : ''}`;
}

/** The demo's aggregated controls in turn: a mean Slider, a vote (Index) and a fraction (Toggle). */
const aggregatedBody = (i: number): object =>
  [{ lid: 10, type: 'Slider', value: (i % 101) / 100 }, { lid: 11, type: 'Index', value: i % 3 }, { lid: 12, type: 'Toggle', value: i % 2 === 0 }][i % 3]!;

/**
 * Part 1: µs of server CPU per action, in one run: the bare uWS HTTP reply and bare uWS socket ack
 * (the floors of the two transports on this machine), POST /action and an action frame.
 */
async function actionCost(): Promise<string> {
  await pinProcess(1);
  const redis = await pinnedRedis(1);
  try {
    const key = await seedDemo(redis.url);
    const gw = await spawnPinnedGateway(redis.url);
    const tokens = await mintTokens(gw.url, key.apiKey, key.layoutId, 2000);
    const requests = actionRequests(tokens, key.layoutId, 10_000, controls === 'aggregated' ? aggregatedBody : undefined);
    const bodies = requests.map((r) => {
      const { layoutId: _, ...b } = JSON.parse(r.body!) as Record<string, unknown>;
      return b;
    });
    const bare = await spawnPinned(0, BARE_HTTP, ['0'], {}, /listening (\d+)/);
    const bareUrl = `http://127.0.0.1:${bare.match[1]!}`;
    progress(`bare uWS reply, ${seconds} s`);
    const bareHttp = await wrkLoad({ name: 'bare reply', url: bareUrl, connections, durationSec: seconds, serverPid: bare.child.pid!, requests });
    await stopChild(bare.child);
    progress(`POST /action, ${seconds} s`);
    const http = await wrkLoad({ name: 'POST /action', url: gw.url, connections, durationSec: seconds, serverPid: gw.child.pid!, requests });
    // the socket ack of bare uWS and of the gateway, both on core 0, in interleaved rounds (what the
    // machine's other tenants do in one minute falls on both)
    const bareWs = await spawnPinned(0, BARE_LIVE, ['0'], {}, /listening (\d+)/, [], process.execPath, true);
    const storingWs = await spawnPinned(0, BARE_LIVE, ['0'], { BARE_STORE_URL: redis.url, BARE_STORE_KEY: 'storing-floor' }, /listening (\d+)/, [], process.execPath, true);
    const actionLoad = { tokens, bodies, connections, seconds, inFlight, rate, perWrite: inFlight }; // at a rate, --window frames a write
    const bareRounds: SocketLoad[] = [];
    const storingRounds: SocketLoad[] = [];
    const gwRounds: SocketLoad[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      progress(`round ${round} of ${ROUNDS}: bare uWS socket ack, the storing floor, then actions over ${connections} gateway sockets, ${seconds} s each`);
      bareRounds.push(await socketActions({ ...actionLoad, url: `http://127.0.0.1:${bareWs.match[1]!}`, pid: bareWs.child.pid! }));
      storingRounds.push(await socketActions({ ...actionLoad, url: `http://127.0.0.1:${storingWs.match[1]!}`, pid: storingWs.child.pid! }));
      gwRounds.push(await socketActions({ ...actionLoad, url: gw.url, pid: gw.child.pid! }));
    }
    await stopChild(bareWs.child);
    await stopChild(storingWs.child);
    await stopChild(gw.child);
    const bareSocket = medianBy(bareRounds, (r) => r.usPerAction);
    const storingSocket = medianBy(storingRounds, (r) => r.usPerAction);
    const ws = medianBy(gwRounds, (r) => r.usPerAction);
    const bareRatios = gwRounds.map((g, i) => g.usPerAction / bareRounds[i]!.usPerAction);
    const storingRatios = gwRounds.map((g, i) => g.usPerAction / storingRounds[i]!.usPerAction);
    const socketRatio = medianBy(storingRatios, (r) => r);
    const ratio = ws.usPerAction / http.serverCpuUsPerRequest!;
    const load = `${connections} sockets, ${rate > 0 ? `${rate} actions/s at an even pace, ${inFlight} frames a write` : `${inFlight} in flight each`}, ${controls} controls; median of ${ROUNDS}`;
    return [
      ...actionTable([
        { path: `${ACTION_PATH.bareHttp} (wrk, ${connections} connections)`, perSecond: bareHttp.requestsPerSec, cpuShare: bareHttp.serverCpuShare!, usPerAction: bareHttp.serverCpuUsPerRequest! },
        { path: `${ACTION_PATH.bareSocket}: JSON.parse, ack with its ref (${load})`, perSecond: bareSocket.perSecond, cpuShare: bareSocket.cpuShare, usPerAction: bareSocket.usPerAction, systemUsPerAction: bareSocket.systemUsPerAction },
        { path: `${ACTION_PATH.storingSocket}: the bare ack after each frame is appended to a Redis stream, one Lua call per turn (${load})`, perSecond: storingSocket.perSecond, cpuShare: storingSocket.cpuShare, usPerAction: storingSocket.usPerAction, systemUsPerAction: storingSocket.systemUsPerAction },
        { path: `${ACTION_PATH.post} (wrk, ${connections} connections)`, perSecond: http.requestsPerSec, cpuShare: http.serverCpuShare!, usPerAction: http.serverCpuUsPerRequest! },
        { path: `${ACTION_PATH.socket} (${load})`, perSecond: ws.perSecond, cpuShare: ws.cpuShare, usPerAction: ws.usPerAction, systemUsPerAction: ws.systemUsPerAction },
      ]),
      '',
      target('CPU per socket action, gateway / the storing floor', socketRatio, '<=', TARGETS.socketAction, `rounds ${storingRatios.map((r) => r.toFixed(2)).join(', ')}; against the bare ack ${medianBy(bareRatios, (r) => r).toFixed(2)}× (rounds ${bareRatios.map((r) => r.toFixed(2)).join(', ')})`),
      `socket / POST: ${ratio.toFixed(2)} of the CPU per action`,
      `the gateway's own work per action (over its transport's bare floor): POST /action ${(http.serverCpuUsPerRequest! - bareHttp.serverCpuUsPerRequest!).toFixed(1)} µs, socket ${(ws.usPerAction - bareSocket.usPerAction).toFixed(1)} µs (${(ws.usPerAction - storingSocket.usPerAction).toFixed(1)} µs over the storing floor)`,
    ].join('\n');
  } finally {
    await redis.stop();
  }
}

/** µs of CPU (all processes, over idle) per crowd frame delivered. */
const crowdUs = (f: SocketFigures) => (f.crowdCores * 1e6) / (f.crowdHz * f.served);
/** µs of CPU (all processes, over idle) per light frame delivered. */
const lightUs = (f: SocketFigures) => (f.lightCores * 1e6) / (f.lightHz * f.served);
/** A sorted list's share-q value. */
const at = (sorted: number[], q: number) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!);

/** The side-by-side table of part 2: the gateway against bare uWS with the same sockets and generators. */
function socketTable(bare: SocketFigures, gw: SocketFigures): string {
  const ratio = (a: number, b: number) => (b > 0 ? `${(a / b).toFixed(2)}x` : '-');
  const pct = (xs: number[]) => xs.map((x) => (x * 100).toFixed(1)).join(', ');
  // Each switch on the gateway beside the switch on bare uWS taken seconds before or after it; the
  // median of these pairs is judged. A p99 pooled over all switches is the one worst switch of
  // either side: in one run it gave 1.02 while the gateway was the slower in 6 of 8 pairs.
  const switchRatios = gw.switches.map((g, i) => g.p99 / bare.switches[i]!.p99);
  return [
    `${gw.served} sockets open on the gateway (${gw.failed} failed) in ${gw.openSeconds.toFixed(1)} s; ${bare.served} on bare uWS in ${bare.openSeconds.toFixed(1)} s`,
    '',
    '| figure | bare uWS | gateway | gateway / bare |',
    '|---|---|---|---|',
    `| memory per socket (RSS growth / sockets) | ${bare.kbPerSocket.toFixed(1)} KB | ${gw.kbPerSocket.toFixed(1)} KB | ${ratio(gw.kbPerSocket, bare.kbPerSocket)} |`,
    `| idle CPU per process (% of a core) | ${pct(bare.idle)} | ${pct(gw.idle)} | |`,
    ...gw.switches.map((g, i) => `| page switch ${i + 1}: frames, p50 / p99 / max ms | ${bare.switches[i]!.frames}, ${bare.switches[i]!.p50} / ${bare.switches[i]!.p99} / ${bare.switches[i]!.max} | ${g.frames}, ${g.p50} / ${g.p99} / ${g.max} | |`),
    `| page switch, all: p50 / p99 / max ms | ${bare.all.p50} / ${bare.all.p99} / ${bare.all.max} | ${gw.all.p50} / ${gw.all.p99} / ${gw.all.max} | p99 ${ratio(gw.all.p99, bare.all.p99)} |`,
    `| crowd at 4 Hz: frames a second per socket | ${bare.crowdHz.toFixed(2)} | ${gw.crowdHz.toFixed(2)} | ${ratio(gw.crowdHz, bare.crowdHz)} |`,
    `| crowd at 4 Hz: cores over idle, all processes | ${bare.crowdCores.toFixed(2)} | ${gw.crowdCores.toFixed(2)} | ${ratio(gw.crowdCores, bare.crowdCores)} |`,
    `| crowd at 4 Hz: µs of CPU per frame delivered | ${crowdUs(bare).toFixed(1)} | ${crowdUs(gw).toFixed(1)} | ${ratio(crowdUs(gw), crowdUs(bare))} |`,
    `| light at 10 a second: frames a second per socket | ${bare.lightHz.toFixed(2)} | ${gw.lightHz.toFixed(2)} | ${ratio(gw.lightHz, bare.lightHz)} |`,
    `| light at 10 a second: cores over idle, all processes | ${bare.lightCores.toFixed(2)} | ${gw.lightCores.toFixed(2)} | ${ratio(gw.lightCores, bare.lightCores)} |`,
    `| light at 10 a second: µs of CPU per frame delivered | ${lightUs(bare).toFixed(1)} | ${lightUs(gw).toFixed(1)} | ${ratio(lightUs(gw), lightUs(bare))} |`,
    `| light: a frame's spread across every socket, p50 / p99 ms (frames every socket got) | ${at(bare.lightSpreads, 0.5)} / ${at(bare.lightSpreads, 0.99)} (${bare.lightSpreads.length}) | ${at(gw.lightSpreads, 0.5)} / ${at(gw.lightSpreads, 0.99)} (${gw.lightSpreads.length}) | p99 ${ratio(at(gw.lightSpreads, 0.99), at(bare.lightSpreads, 0.99))} |`,
    '',
    'gateway crowd cores include the 80 slider moves a second (POST /action) that drive it; light cores do not include Redis, which takes the 10 appends a second',
    '',
    target('page switch to every socket, p99, gateway / bare (median of the switch pairs)', medianBy(switchRatios, (r) => r), '<=', TARGETS.pageSwitchP99, `switch by switch ${switchRatios.map((r) => r.toFixed(2)).join(', ')}; all switches pooled ${ratio(gw.all.p99, bare.all.p99)}`),
    target('CPU per crowd frame delivered, gateway / bare', crowdUs(gw) / crowdUs(bare), '<=', TARGETS.crowdFrameCpu),
    target('crowd frames a second per socket at 4 Hz, gateway / bare', gw.crowdHz / bare.crowdHz, '>=', TARGETS.crowdFrameRate),
    target('CPU per light frame delivered, gateway / bare', lightUs(gw) / lightUs(bare), '<=', TARGETS.lightFrameCpu),
    target('gateway memory per socket, KB', gw.kbPerSocket, '<=', TARGETS.socketKb),
    target('gateway idle CPU, the busiest process, share of a core', Math.max(...gw.idle), '<', TARGETS.idleShare),
  ].join('\n');
}

async function main(): Promise<void> {
  const sha = await promisify(execFile)('git', ['rev-parse', '--short', 'HEAD']).then((r) => r.stdout.trim(), () => 'unknown');
  const out: string[] = [];
  const say = (text: string) => {
    out.push(text, '');
    process.stdout.write(`${text}\n\n`);
  };
  say(`machine: ${cpus().length} cores (shared, with the generators), Node ${process.version}, commit ${sha}; ${seconds} s per measurement`);
  if (values.only === undefined || values.only === 'action') say(await actionCost());
  await pinProcess('0-1');
  if (values.only === 'action') return;
  const bare = values.only === 'gateway-sockets' ? null : await bareTarget(workers);
  const redis = await pinnedRedis(1);
  const held: HeldSockets[] = [];
  try {
    // a participant per socket, as phones are: a participant's sockets on other processes are closed (CLOSE.replaced)
    const gateway = await gatewayTarget(redis.url, workers, socketCount);
    try {
      // each target from generators of its own: the gateway on 127.0.0.2, .3, ..., bare uWS on the next
      // ones. The gateway's first, as soon as its tokens are minted, as when it ran alone: its memory
      // per socket is the growth of its processes' RSS, which the minting's garbage, collected while
      // the other target's sockets open, made smaller than the sockets' own cost (0.4 KB, under the floor's 1.0)
      const onGateway = await HeldSockets.open(gateway, socketCount, perGenerator, 2);
      held.push(onGateway);
      if (bare) held.unshift(await HeldSockets.open(bare, socketCount, perGenerator, 2 + Math.ceil(socketCount / perGenerator)));
      const figures = await measureSockets(held, { seconds, switches: SWITCHES }); // bare uWS first, then the gateway
      say(figures.length === 2 ? socketTable(figures[0]!, figures[1]!) : JSON.stringify(figures[0]));
      say(await gateway.health());
    } finally {
      for (const h of held) h.close();
      await gateway.stop();
    }
  } finally {
    await bare?.stop();
    await redis.stop();
  }
  if (values.only !== undefined) return;
  mkdirSync('bench/results', { recursive: true });
  const file = `bench/results/live-${new Date().toISOString().replace(/[:.]/g, '-')}.md`;
  writeFileSync(file, `# bench -- live\n\n${out.join('\n')}`);
  process.stdout.write(`written: ${file}\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(`bench: ${String(e)}\n`);
  process.exit(1);
});
