// Crowd aggregation, with and without, side by side on this machine: the gateway on core 0; Redis,
// the bridge, the generators and the UDP sink on core 1. Two layouts that differ only in
// `aggregate`: demo-show (every action forwarded) and crowd-show (Slider lid 2 folded as a median,
// Button lid 1 as a rate).
//   npm run bench -- crowd [--seconds 6 --rate 8000]   (writes bench/results/crowd-<time>.md)
// 1. The most this machine can generate (wrk, 100 connections, 5,000 participants): actions/s in,
//    entries/s into Redis, bridge CPU.
// 2. Open loop at R and 2R (Button presses): does the bridge's CPU stay flat as the rate doubles?
// 3. End to end at 2,000/s (bridge at 100 and 1,000 Hz): when does the wire first count a press?
//    For both layouts the k-th press (in write order) counts as delivered once the wire has shown
//    k presses: the k-th /001 message for demo-show, a crowd rate of k presses for crowd-show.
// 4. Counted twice: with GATEWAY_WORKERS=2, how many participants the merged summaries count
//    against how many there were: each participant's requests spread over 50 shared connections
//    (the worst case: a phone that reconnects for every request), and each participant on one
//    keep-alive connection of its own (as a phone's app does).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { CrowdTable, type CrowdValue } from '../schemas/crowd-merge.js';
import { DEMO_LAYOUT_FILE } from '../schemas/demo-layout.js';
import { decodeStreamEntry } from '../schemas/action-entry.js';
import { actionStreamKey } from '../schemas/redis-keys.js';
import { cpuSeconds, percentiles, pinProcess, pinnedRedis, spawnPinnedGateway, stopChild, wrkLoad } from './harness.js';
import { actionRequests, mintTokens, seedDemo } from './audience.js';
import { oscSink as sink, spawnBenchBridge } from './action-to-display.js';
import { openLoop } from './open-loop.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '6' }, rate: { type: 'string', default: '8000' } } });
const SECONDS = Number(values.seconds);
const RATE = Number(values.rate);
const FOLD_MS = 10;
/** wrk connections: a closed loop waits up to a fold tick per answer, so it needs more connections than the plain layout to load the gateway */
const CONNECTIONS = 400;
const PLAIN = 'demo-show';
const CROWD = 'crowd-show';
const LAYOUTS = [PLAIN, CROWD] as const;

function crowdLayout(): object {
  const demo = JSON.parse(readFileSync(DEMO_LAYOUT_FILE, 'utf8')) as { layoutId: string; name: string; pages: { controls: { lid: number; aggregate?: object }[] }[] };
  demo.layoutId = CROWD;
  demo.name = 'Crowd show';
  for (const c of demo.pages[0]!.controls) {
    if (c.lid === 1) c.aggregate = { mode: 'rate', windowMs: 600_000 };
    if (c.lid === 2) c.aggregate = { mode: 'median', windowMs: 600_000 };
  }
  return demo;
}

const progress = (what: string) => process.stderr.write(`bench: ${what}\n`);
const lines: string[] = [];
const say = (line = '') => lines.push(line);

async function entriesAdded(admin: Redis, layoutId: string): Promise<number> {
  try {
    const info = (await admin.call('XINFO', 'STREAM', actionStreamKey('ac:', layoutId))) as (string | number)[];
    return Number(info[info.indexOf('entries-added') + 1]);
  } catch {
    return 0; // no stream yet
  }
}

async function main(): Promise<void> {
  await pinProcess(1);
  const redis = await pinnedRedis(1);
  const admin = new Redis(redis.url);
  try {
    const seed = await seedDemo(redis.url, 'ac:', [crowdLayout()]);
    const gw = await spawnPinnedGateway(redis.url);
    progress('minting 5,000 tokens (participants)');
    const tokens = await mintTokens(gw.url, seed.apiKey, PLAIN, 5000);
    const crowdTokens = await mintTokens(gw.url, seed.apiKey, CROWD, 5000);
    const sliders = (layoutId: string) => actionRequests(layoutId === PLAIN ? tokens : crowdTokens, layoutId, 10_000, (i) => ({ lid: 2, type: 'Slider', value: (i % 101) / 100 }));

    say(`machine: 2 cores, Node ${process.version}; gateway on core 0; Redis, bridge, generators and sink on core 1; fold tick ${FOLD_MS} ms; ${SECONDS} s a phase`);
    say();
    say(`### 1. The most this machine generates into one layout (wrk, ${CONNECTIONS} connections, 5,000 participants, Slider lid 2)`);
    say();
    say('| layout | actions/s in (200) | entries/s into Redis | bridge CPU (share of a core) | gateway CPU µs/action | non-2xx |');
    say('|---|---|---|---|---|---|');
    const ignore = await sink(() => {});
    for (const layoutId of LAYOUTS) {
      progress(`closed loop into ${layoutId}`);
      const bridge = await spawnBenchBridge({ redisUrl: redis.url, layoutId, port: ignore.port, tickHz: 100, id: `max-${layoutId}` });
      await wrkLoad({ name: 'warm-up', url: gw.url, connections: CONNECTIONS, durationSec: 2, serverPid: gw.child.pid!, requests: sliders(layoutId) });
      const before = await entriesAdded(admin, layoutId);
      const bridgeCpu = cpuSeconds(bridge.child.pid!);
      const started = performance.now();
      const r = await wrkLoad({ name: layoutId, url: gw.url, connections: CONNECTIONS, durationSec: SECONDS, serverPid: gw.child.pid!, requests: sliders(layoutId) });
      const elapsed = (performance.now() - started) / 1000;
      const added = (await entriesAdded(admin, layoutId)) - before;
      const bridgeShare = (cpuSeconds(bridge.child.pid!) - bridgeCpu) / elapsed;
      await stopChild(bridge.child);
      say(`| ${layoutId}${layoutId === CROWD ? ' (median)' : ' (plain)'} | ${Math.round(r.requestsPerSec)} | ${Math.round(added / elapsed)} | ${bridgeShare.toFixed(3)} | ${r.serverCpuUsPerRequest?.toFixed(1) ?? '-'} | ${r.non2xx} |`);
    }
    say();
    say(`Bound for ${CROWD}: 1000 / ${FOLD_MS} ms fold ticks × 1 gateway process = ${1000 / FOLD_MS} entries/s per aggregated control.`);

    say();
    say(`### 2. Open loop at ${RATE}/s and ${2 * RATE}/s, Button lid 1 (plain: every press is a message; crowd: a rate), ${CONNECTIONS} connections: bridge CPU as the rate doubles`);
    say();
    say('| layout | rate | actions/s answered 200 | entries/s into Redis | answer p99 ms | bridge CPU (share of a core) |');
    say('|---|---|---|---|---|---|');
    const presses = (layoutId: string) => actionRequests(layoutId === PLAIN ? tokens : crowdTokens, layoutId, 10_000, () => ({ lid: 1, type: 'Button' }));
    for (const layoutId of LAYOUTS) {
      const bridge = await spawnBenchBridge({ redisUrl: redis.url, layoutId, port: ignore.port, tickHz: 100, id: `double-${layoutId}` });
      const idleCpu = cpuSeconds(bridge.child.pid!);
      await new Promise((res) => setTimeout(res, 3000));
      say(`| ${layoutId} | idle, 3 s | 0 | 0 | - | ${((cpuSeconds(bridge.child.pid!) - idleCpu) / 3).toFixed(3)} |`);
      for (const rate of [RATE, 2 * RATE]) {
        progress(`open loop ${rate}/s into ${layoutId}`);
        const before = await entriesAdded(admin, layoutId);
        const bridgeCpu = cpuSeconds(bridge.child.pid!);
        const started = performance.now();
        const r = await openLoop({ name: layoutId, url: gw.url, rate, durationSec: SECONDS, connections: CONNECTIONS, requests: presses(layoutId) });
        const elapsed = (performance.now() - started) / 1000; // longer than SECONDS if the gateway fell behind
        const added = (await entriesAdded(admin, layoutId)) - before;
        const bridgeShare = (cpuSeconds(bridge.child.pid!) - bridgeCpu) / elapsed;
        say(`| ${layoutId} | ${rate}/s | ${Math.round((r.total - r.non2xx) / elapsed)} | ${Math.round(added / elapsed)} | ${r.latencyMs.p99.toFixed(1)} | ${bridgeShare.toFixed(3)} |`);
      }
      await stopChild(bridge.child);
    }
    ignore.close();

    say();
    say('### 3. End to end at 2,000 presses/s: write to the wire counting the press (Button lid 1)');
    say();
    say('| bridge | layout | p50 ms | p99 ms | max ms | presses answered 200 | counted on the wire |');
    say('|---|---|---|---|---|---|---|');
    for (const tickHz of [100, 1000]) {
      const p99s: Record<string, number> = {};
      for (const layoutId of LAYOUTS) {
        progress(`end to end, ${layoutId}, bridge ${tickHz} Hz`);
        // counted[k]: when the wire first showed k + 1 presses (since this phase began)
        const counted: number[] = [];
        let base: number | null = null;
        const s = await sink((address, args, at) => {
          if (address !== '/001') return;
          if (layoutId === PLAIN) counted.push(at);
          else {
            const total = Math.round(args[0]! * 600); // rate × window in seconds
            base ??= total - 0; // the first value seen: presses from earlier phases
            while (counted.length < total - base) counted.push(at);
          }
        });
        const bridge = await spawnBenchBridge({ redisUrl: redis.url, layoutId, port: s.port, tickHz, id: `e2e-${layoutId}-${tickHz}` });
        const buttons = presses(layoutId);
        await openLoop({ name: 'warm-up', url: gw.url, rate: 2000, durationSec: 2, connections: 50, requests: buttons });
        await new Promise((res) => setTimeout(res, 500));
        counted.length = 0;
        base = null;
        if (layoutId === CROWD) {
          // one press so the sink learns where the count stands, then measure from there
          await openLoop({ name: 'mark', url: gw.url, rate: 100, durationSec: 0.01, connections: 1, requests: buttons });
          await new Promise((res) => setTimeout(res, 300));
          counted.length = 0;
        }
        const writtenAt = new Float64Array(2000 * 5).fill(NaN);
        const r = await openLoop({ name: 'e2e', url: gw.url, rate: 2000, durationSec: 5, connections: 50, requests: buttons, writtenAt });
        await new Promise((res) => setTimeout(res, 1000));
        await stopChild(bridge.child);
        s.close();
        const order = [...writtenAt].filter((t) => !Number.isNaN(t)).sort((a, b) => a - b);
        const latencies = order.map((t, k) => (counted[k] ?? NaN) - t).filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
        const p = percentiles(latencies);
        p99s[layoutId] = p.p99;
        say(`| ${tickHz} Hz | ${layoutId}${layoutId === CROWD ? ' (rate)' : ' (plain)'} | ${p.p50.toFixed(1)} | ${p.p99.toFixed(1)} | ${p.max.toFixed(1)} | ${r.total - r.non2xx} | ${Math.min(counted.length, order.length)} |`);
      }
      say(`|  | aggregated p99 − plain p99 | | ${(p99s[CROWD]! - p99s[PLAIN]!).toFixed(1)} (target ≤ ${FOLD_MS}, one fold tick) | | | |`);
    }
    await stopChild(gw.child);

    say();
    say('### 4. Counted twice: GATEWAY_WORKERS=2, each participant over many connections');
    say();
    progress('counted twice, with 2 gateway workers');
    const workers = await spawnPinnedGateway(redis.url, { env: { GATEWAY_WORKERS: '2' } });
    const participants = 2000;
    const fresh = await mintTokens(workers.url, seed.apiKey, CROWD, participants);
    const key = actionStreamKey('ac:', CROWD);
    const from = (await admin.xrevrange(key, '+', '-', 'COUNT', 1))[0]?.[0] ?? '0-0';
    // New gateway processes start with empty folds: their summaries count only these participants.
    const requests = actionRequests(fresh, CROWD, participants * 3, (i) => ({ lid: 2, type: 'Slider', value: (i % 101) / 100 }));
    await openLoop({ name: 'workers', url: workers.url, rate: 3000, durationSec: (participants * 3) / 3000, connections: 50, requests });
    await new Promise((res) => setTimeout(res, 300));
    const merged = newestMerged(await admin.xrange(key, `(${from}`, '+'), 2);
    say(`${participants} participants, 3 actions each over 50 shared connections (a participant's actions can reach either worker): merged n = ${merged.n} for ${participants} participants: ${(100 * (merged.n / participants - 1)).toFixed(1)} % counted twice.`);
    // As phones do: each participant keeps one keep-alive connection for its actions (on lid 1, a fresh count).
    progress('counted twice, one connection per participant');
    const phones = await mintTokens(workers.url, seed.apiKey, CROWD, participants);
    const mark = (await admin.xrevrange(key, '+', '-', 'COUNT', 1))[0]?.[0] ?? '0-0';
    for (let i = 0; i < participants; i += 100) {
      await Promise.all(
        phones.slice(i, i + 100).map(async (token) => {
          const agent = new HttpAgent({ keepAlive: true, maxSockets: 1 });
          for (let k = 0; k < 3; k++) await post(workers.url, token, { layoutId: CROWD, lid: 1, type: 'Button' }, agent);
          agent.destroy();
        }),
      );
    }
    await new Promise((res) => setTimeout(res, 300));
    const onePerPhone = newestMerged(await admin.xrange(key, `(${mark}`, '+'), 1);
    await stopChild(workers.child);
    say(`${participants} participants, 3 presses each over one keep-alive connection of their own: merged n = ${onePerPhone.n} for ${participants} participants: ${(100 * (onePerPhone.n / participants - 1)).toFixed(1)} % counted twice.`);
  } finally {
    admin.disconnect();
    await redis.stop();
  }
  const text = `${lines.join('\n')}\n`;
  mkdirSync('bench/results', { recursive: true });
  const file = `bench/results/crowd-${new Date().toISOString().replace(/[:.]/g, '-')}.md`;
  writeFileSync(file, `# bench -- crowd\n\n${text}`);
  process.stdout.write(`${text}\nwritten: ${file}\n`);
}

/** The merged value of one control from stream entries, as a bridge merges them (the newest summary of each source). */
function newestMerged(entries: [string, string[]][], lid: number): CrowdValue {
  const table = new CrowdTable();
  for (const [, f] of entries) {
    const d = decodeStreamEntry(f);
    if (d.ok && 'summary' in d) table.offer(d.summary);
  }
  return table.changed(Date.now()).find((v) => v.lid === lid)!;
}

/** One POST /action on the given keep-alive agent. */
function post(url: string, token: string, body: object, agent: HttpAgent): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}/action`, { method: 'POST', agent, headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

main().catch((e: unknown) => {
  process.stderr.write(`bench: ${String(e)}\n`);
  process.exit(1);
});
