// Where the microseconds of POST /action go: each step of the request path removed (or done twice,
// where removing it would break the path) in a copy of the built gateway, and run against the
// unchanged gateway in interleaved A/B pairs, with the gateway's CPU time per request as the figure
// (the hypervisor's steal does not inflate it). The copies live in var/ablation/ and are edited by
// text replacement of the compiled JavaScript, so the production code carries no bench switch; an
// edit that no longer applies stops the run, naming it.
//   npm run bench:ablation [-- --seconds 6 --pairs 2 --only request-id,uuid]
//   npm run bench:ablation -- --base /path/to/other/dist [--with /path/to/dist]   (A: that build, B: this one or --with: what a change saved)
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { GATEWAY_NODE_FLAGS } from '../gateway/node-flags.js';
import { ABLATIONS, ablatedCopy, type Ablation } from './action-ablation-edits.js';
import { pinProcess, pinnedRedis, spawnPinned, stealMeter, stopChild, wrkLoad, type LoadResult, spawnPinnedGateway, type BuiltRequest } from './harness.js';
import { actionRequests, mintTokens, seedDemo } from './audience.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '6' }, pairs: { type: 'string', default: '2' }, only: { type: 'string', default: '' }, base: { type: 'string', default: '' }, with: { type: 'string', default: '' }, tokens: { type: 'string', default: '2000' } } });
const SECONDS = Number(values.seconds);
const PAIRS = Number(values.pairs);
const CONNECTIONS = 100;

const DIST = fileURLToPath(new URL('..', import.meta.url)); // dist/
const VARIANTS = join(DIST, '..', 'var', 'ablation');
const BARE = join(DIST, 'bench', 'bare-uws.js');

/** A copy of dist/ with the ablation's edits; throws when an edit no longer applies. */
function variant(a: Ablation): string {
  return ablatedCopy(DIST, join(VARIANTS, a.name), a);
}

function progress(what: string): void {
  process.stderr.write(`ablation: ${what}\n`);
}

interface Pairing {
  a: LoadResult[];
  b: LoadResult[];
}

async function main(): Promise<void> {
  await pinProcess(1);
  const steal = stealMeter();
  const only = values.only ? new Set(values.only.split(',')) : null;
  const chosen: Ablation[] = values.base
    ? [{ name: 'build', step: `the build in ${values.base} (A) against this one (B): what B saves`, how: 'removed', edits: [] }]
    : ABLATIONS.filter((a) => !only || only.has(a.name));
  if (!values.base) for (const a of chosen) variant(a); // every edit still applies, before minutes of measuring
  const redis = await pinnedRedis(1);
  const gatewayA = values.base ? join(values.base, 'gateway', 'main.js') : join(DIST, 'gateway', 'main.js');
  const results = new Map<string, Pairing>();
  let requests: BuiltRequest[] = [];
  const bare: LoadResult[] = [];
  const bareBody: LoadResult[] = [];
  try {
    const key = await seedDemo(redis.url);
    const runGateway = async (main: string, name: string, flags = GATEWAY_NODE_FLAGS): Promise<LoadResult> => {
      const gw = await spawnPinnedGateway(redis.url, { main, nodeArgs: flags });
      try {
        const url = gw.url;
        if (requests.length === 0) requests = actionRequests(await mintTokens(url, key.apiKey, key.layoutId, Number(values.tokens)), key.layoutId);
        await wrkLoad({ name: 'warm-up', url, connections: CONNECTIONS, durationSec: 2, serverPid: gw.child.pid!, requests });
        return await wrkLoad({ name, url, connections: CONNECTIONS, durationSec: SECONDS, serverPid: gw.child.pid!, requests });
      } finally {
        await stopChild(gw.child);
      }
    };
    const runBare = async (args: string[]): Promise<LoadResult> => {
      const b = await spawnPinned(0, BARE, args, {}, /listening (\d+)/);
      try {
        return await wrkLoad({ name: 'bare', url: `http://127.0.0.1:${b.match[1]}`, connections: CONNECTIONS, durationSec: SECONDS, serverPid: b.child.pid!, requests });
      } finally {
        await stopChild(b.child);
      }
    };
    await runGateway(gatewayA, 'tokens'); // mints the tokens the bare runs also send
    for (let p = 0; p < PAIRS; p++) {
      progress(`bare reply, pair ${p + 1}`);
      bare.push(await runBare(['0']));
      bareBody.push(await runBare(['0', '--read-body']));
    }
    for (const a of chosen) {
      const b = values.base ? join(values.with || DIST, 'gateway', 'main.js') : variant(a);
      const pairing: Pairing = { a: [], b: [] };
      results.set(a.name, pairing);
      for (let p = 0; p < PAIRS; p++) {
        progress(`${a.name}: pair ${p + 1} of ${PAIRS}`);
        // ABBA: each pair swaps the order, so a drifting host favours neither side
        const order = p % 2 === 0 ? (['a', 'b'] as const) : (['b', 'a'] as const);
        for (const side of order) {
          const r = side === 'a' ? await runGateway(gatewayA, 'A') : await runGateway(a.nodeFlags ? gatewayA : b, 'B', a.nodeFlags ?? GATEWAY_NODE_FLAGS);
          pairing[side].push(r);
        }
      }
    }
  } finally {
    await redis.stop();
    rmSync(VARIANTS, { recursive: true, force: true });
  }

  const us = (r: LoadResult) => r.serverCpuUsPerRequest ?? NaN;
  const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
  const fmt = (xs: number[]) => xs.map((x) => x.toFixed(1)).join(', ');
  const out: string[] = [];
  out.push(`machine: ${(await import('node:os')).cpus().length} cores (${(await import('node:os')).cpus()[0]?.model ?? '?'}), Node ${process.version}; wrk, ${CONNECTIONS} connections, ${SECONDS} s a run, ${PAIRS} interleaved pairs per row; host CPU steal over the run ${(steal() * 100).toFixed(1)} %`);
  out.push('');
  out.push(`bare uWS reply: ${fmt(bare.map(us))} µs/request (${fmt(bare.map((r) => r.requestsPerSec / 1000))}k req/s); with the body read (onData, copied): ${fmt(bareBody.map(us))} µs/request → body delivery ≈ ${(mean(bareBody.map(us)) - mean(bare.map(us))).toFixed(1)} µs`);
  out.push('');
  out.push('| step | how | A: gateway µs/request | B: variant µs/request | cost of the step, µs (per pair) | mean |');
  out.push('|---|---|---|---|---|---|');
  for (const a of chosen) {
    const r = results.get(a.name)!;
    const deltas = r.a.map((x, i) => (a.how === 'doubled' || a.how === 'added' ? us(r.b[i]!) - us(x) : us(x) - us(r.b[i]!)));
    out.push(`| ${a.step} | ${a.how} | ${fmt(r.a.map(us))} | ${fmt(r.b.map(us))} | ${fmt(deltas)} | **${mean(deltas).toFixed(1)}** |`);
  }
  const allA = [...results.values()].flatMap((r) => r.a.map(us));
  out.push('');
  out.push(`gateway A over all rows: mean ${mean(allA).toFixed(1)} µs/request (min ${Math.min(...allA).toFixed(1)}, max ${Math.max(...allA).toFixed(1)}), against ${mean(bare.map(us)).toFixed(1)} for the bare reply`);
  process.stdout.write(`\n${out.join('\n')}\n`);
  const resultsDir = join(DIST, '..', 'bench', 'results');
  mkdirSync(resultsDir, { recursive: true });
  const file = join(resultsDir, `ablation-${new Date().toISOString().replace(/[:.]/g, '-')}.md`);
  writeFileSync(file, `${out.join('\n')}\n`);
  progress(`wrote ${file}`);
}

main().catch((e: unknown) => {
  process.stderr.write(`ablation: ${String(e)}\n`);
  process.exit(1);
});
