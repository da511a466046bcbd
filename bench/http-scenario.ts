// The suite's http scenario (`npm run bench -- http`), in the bench's own process: the timer floor of
// this machine, the bare uWebSockets.js reply against POST /action (the target ratio, wrk in
// interleaved pairs), /token and /layout, POST /action at half its maximum rate (open loop), end to
// end through the bridge to a UDP sink, an entry's bytes on the bridge's link, and the gateway's
// memory with 100,000 tokens cached. Gateway on core 0; Redis, the generators and the sink on core 1.
import { fileURLToPath } from 'node:url';
import { actionStreamKey } from '../schemas/redis-keys.js';
import { measureEndToEnd } from './action-to-display.js';
import { actionRequests, mintTokens, seedDemo } from './audience.js';
import { CROWD_MIX, entryWireBytes } from './entry-bytes.js';
import { cpuSeconds, load, medianBy, percentiles, pinProcess, pinnedRedis, rssMiB, spawnPinned, spawnPinnedGateway, stealMeter, stopChild, wrkLoad, type LoadResult, type Percentiles } from './harness.js';
import { openLoop } from './open-loop.js';
import { progress, type RunRecord } from './run-record.js';

const BARE = fileURLToPath(new URL('./bare-uws.js', import.meta.url));
export const CONNECTIONS = 100;
/** The /action target's wrk runs: this many pairs (bare reply, then /action), each run this long. */
const RATIO_PAIRS = 3;
const RATIO_SECONDS = 6;

function describeLoad(r: LoadResult, ceiling: number): string {
  return `${Math.round(r.requestsPerSec)} req/s (${(r.requestsPerSec / ceiling).toFixed(2)}× ceiling), p50 ${r.latencyMs.p50.toFixed(2)} ms, p99 ${r.latencyMs.p99.toFixed(2)} ms, non-2xx ${r.non2xx}, server CPU ${r.serverCpuShare?.toFixed(2) ?? '-'} of a core, ${r.serverCpuUsPerRequest?.toFixed(1) ?? '-'} µs/request`;
}

async function endToEnd({ row, raw }: Pick<RunRecord, 'row' | 'raw'>, url: string, tokens: string[], redisUrl: string, tickHz: number, rate: number): Promise<void> {
  const e = await measureEndToEnd({ url, tokens, redisUrl, tickHz, rate });
  const { p50, p99, p999, max, accepted: ok } = e;
  const lost = Math.max(0, ok - e.received);
  raw[`e2e_${tickHz}hz_${rate}`] = { sent200: ok, received: e.received, p50, p99, p999, max };
  const tickMs = 1000 / tickHz;
  const target = rate === 2000 ? `p99 ≤ ${tickMs + 2} ms (tick ${tickMs} ms + 2), zero loss` : 'report';
  const met = rate === 2000 ? p99 <= tickMs + 2 && lost === 0 : null;
  row(`end to end, ${rate}/s open loop, bridge ${tickHz} Hz`, `p50 ${p50.toFixed(1)} / p99 ${p99.toFixed(1)} / p99.9 ${p999.toFixed(1)} / max ${max.toFixed(1)} ms; ${ok} accepted, ${lost} lost (${e.http.non2xx} non-2xx)`, target, met);
}

/** How late a 1 ms Node timer fires on an otherwise idle core: the floor this machine sets under every latency figure. */
function timerJitter(seconds: number): Promise<Percentiles> {
  const late: number[] = [];
  let last = performance.now();
  return new Promise((resolve) => {
    const t = setInterval(() => {
      const now = performance.now();
      late.push(now - last - 1);
      last = now;
    }, 1);
    setTimeout(() => {
      clearInterval(t);
      late.sort((a, b) => a - b);
      resolve(percentiles(late));
    }, seconds * 1000);
  });
}

/** The HTTP API against bare uWS, end to end through the bridge, and the gateway's memory: one gateway, in this process's generators. */
export async function httpScenario(record: RunRecord): Promise<void> {
  const { row, raw } = record;
  await pinProcess(1); // autocannon, the open-loop generator and the UDP sink run in this process
  const redis = await pinnedRedis(1);
  try {
    progress('timer jitter of this machine, 5 s idle');
    const jitter = await timerJitter(5);
    raw.timerJitterMs = jitter;
    row('machine floor: lateness of a 1 ms timer, idle', `p50 ${jitter.p50.toFixed(2)} / p99 ${jitter.p99.toFixed(2)} / p99.9 ${jitter.p999.toFixed(2)} / max ${jitter.max.toFixed(2)} ms`, 'reference', null);

    progress('bare uWS ceiling (autocannon)');
    // The bare server stays up (idle) beside the gateway on core 0, so the wrk runs below can alternate.
    const bare = await spawnPinned(0, BARE, ['0'], {}, /listening (\d+)/);
    const bareUrl = `http://127.0.0.1:${bare.match[1]}`;
    const ceilingAc = await load({ name: 'bare', url: bareUrl, connections: CONNECTIONS, durationSec: 10, serverPid: bare.child.pid! });
    raw.ceilingAutocannon = ceilingAc;
    row('bare uWS reply, autocannon', describeLoad(ceilingAc, ceilingAc.requestsPerSec), 'reference', null);
    if ((ceilingAc.serverCpuShare ?? 1) < 0.9) row('autocannon as generator', `the bare server used only ${ceilingAc.serverCpuShare?.toFixed(2)} of its core under autocannon (one process, sharing core 1 with Redis): autocannon is the bottleneck there, so the target is measured with wrk`, 'note', null);

    const seed = await seedDemo(redis.url);
    const gw = await spawnPinnedGateway(redis.url);
    const url = gw.url;
    progress('minting 5,000 tokens');
    const tokens = await mintTokens(url, seed.apiKey, seed.layoutId, 5000);

    progress('POST /action, mix over 5,000 tokens (autocannon)');
    const requests = actionRequests(tokens, seed.layoutId);
    let n = 0;
    const actionAc = await load({ name: 'action', url, connections: CONNECTIONS, durationSec: 10, serverPid: gw.child.pid!, request: () => requests[n++ % requests.length]! });
    raw.actionAutocannon = actionAc;
    row('POST /action, control mix, 5,000 tokens, autocannon', describeLoad(actionAc, ceilingAc.requestsPerSec), 'report (ratio to the autocannon ceiling)', null);

    // The target ratio: wrk against the bare reply and against /action in alternation, each pair a
    // few seconds apart, so a drift of this shared machine moves both sides of a ratio alike.
    progress(`bare reply and POST /action, wrk, ${RATIO_PAIRS} interleaved pairs`);
    const stealPairs = stealMeter();
    const pairs: { bare: LoadResult; action: LoadResult; ratio: number }[] = [];
    for (let i = 1; i <= RATIO_PAIRS; i++) {
      const b = await wrkLoad({ name: `bare (wrk) ${i}`, url: bareUrl, connections: CONNECTIONS, durationSec: RATIO_SECONDS, serverPid: bare.child.pid! });
      const a = await wrkLoad({ name: `action (wrk) ${i}`, url, connections: CONNECTIONS, durationSec: RATIO_SECONDS, serverPid: gw.child.pid!, requests });
      pairs.push({ bare: b, action: a, ratio: a.requestsPerSec / b.requestsPerSec });
    }
    raw.hostStealDuringPairs = stealPairs();
    await stopChild(bare.child);
    const median = medianBy(pairs, (p) => p.ratio);
    const { bare: ceiling, action } = median;
    raw.ratioPairs = pairs;
    raw.ceiling = ceiling;
    raw.action = action;
    const perPair = pairs.map((p) => `${p.ratio.toFixed(2)}× (${Math.round(p.action.requestsPerSec)} vs ${Math.round(p.bare.requestsPerSec)}; ${p.action.serverCpuUsPerRequest?.toFixed(1) ?? '-'} vs ${p.bare.serverCpuUsPerRequest?.toFixed(1) ?? '-'} µs)`).join(', ');
    row('bare uWS reply (the ceiling), wrk, the median pair', describeLoad(ceiling, ceiling.requestsPerSec), 'reference', null);
    row('POST /action, control mix, 5,000 tokens, wrk, the median pair', `${describeLoad(action, ceiling.requestsPerSec)}; every pair: ${perPair}`, '≥ 0.50× ceiling (median of the pairs)', median.ratio >= 0.5);

    progress('POST /token');
    const token = await load({ name: 'token', url, connections: CONNECTIONS, durationSec: 5, serverPid: gw.child.pid!, request: () => ({ method: 'POST', path: '/token', headers: { 'content-type': 'application/json', 'x-api-key': seed.apiKey }, body: '{"layoutId":"demo-show"}' }) });
    raw.token = token;
    row('POST /token, autocannon', describeLoad(token, ceilingAc.requestsPerSec), 'report', null);

    progress('GET /layout');
    const layout = await load({ name: 'layout', url, connections: CONNECTIONS, durationSec: 5, serverPid: gw.child.pid!, request: () => ({ method: 'GET', path: '/layout/demo-show', headers: { 'x-api-key': seed.apiKey } }) });
    raw.layout = layout;
    row('GET /layout, autocannon', describeLoad(layout, ceilingAc.requestsPerSec), 'report', null);

    const half = Math.round(action.requestsPerSec / 2);
    progress(`POST /action at half the maximum rate (${half}/s, open loop)`);
    const halfRate = await openLoop({ name: 'half', url, rate: half, durationSec: 10, connections: CONNECTIONS, requests });
    raw.halfRate = halfRate;
    const ms = (v: number) => v.toFixed(2);
    const fromSchedule = halfRate.fromScheduleMs;
    row(
      `POST /action at half the max rate (${half}/s, open loop)`,
      `p50 ${ms(halfRate.latencyMs.p50)} / p99 ${ms(halfRate.latencyMs.p99)} / p99.9 ${ms(halfRate.latencyMs.p999)} / max ${ms(halfRate.latencyMs.max)} ms from the write; from the scheduled time p99 ${ms(fromSchedule?.p99 ?? NaN)} ms; non-2xx ${halfRate.non2xx} (statuses ${JSON.stringify(halfRate.statuses)}), errors ${halfRate.errors}`,
      'gateway p99 ≤ 5 ms',
      halfRate.latencyMs.p99 <= 5,
    );

    for (const tickHz of [100, 1000]) {
      for (const rate of [1000, 2000, 5000]) {
        progress(`end to end at ${rate}/s, bridge ${tickHz} Hz`);
        await endToEnd(record, url, tokens, redis.url, tickHz, rate);
      }
    }

    progress('crowd summaries, and what an entry takes on the bridge\'s Redis link');
    const crowdRequests = actionRequests(tokens, seed.layoutId, 10_000, (i) => CROWD_MIX[i % CROWD_MIX.length]!(i));
    let c = 0;
    await load({ name: 'crowd', url, connections: CONNECTIONS, durationSec: 3, serverPid: gw.child.pid!, request: () => crowdRequests[c++ % crowdRequests.length]! });
    const entries = await entryWireBytes(redis.url, actionStreamKey('ac:', seed.layoutId));
    raw.entryBytes = entries;
    row("an entry on the bridge's Redis link (RESP, as XREADGROUP returns it)", `action ${entries.action.toFixed(0)} B (mean of ${entries.actions}), crowd summary ${entries.summary.toFixed(0)} B (mean of ${entries.summaries})`, 'report', null);

    progress('gateway memory with 100,000 live tokens cached');
    const many = await mintTokens(url, seed.apiKey, seed.layoutId, 100_000, 64);
    const warm = actionRequests(many, seed.layoutId, many.length, () => ({ lid: 1, type: 'Button' }));
    let w = 0;
    await load({ name: 'warm', url, connections: 64, durationSec: 120, amount: warm.length, request: () => warm[w++ % warm.length]! });
    const rss = rssMiB(gw.child.pid!);
    raw.memory = { tokens: many.length, rssMiB: rss, cpuSeconds: cpuSeconds(gw.child.pid!) };
    row('gateway resident memory, 100,000 distinct live tokens cached', `${rss.toFixed(0)} MiB`, '≤ 150 MB', rss * 1.048576 <= 150);
    await stopChild(gw.child);
  } finally {
    await redis.stop();
  }
}
