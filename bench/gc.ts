// What the gateway's garbage collector costs, and whether it sets the tail: the gateway runs with
// its unit's heap flags and --trace-gc-nvp on core 0, loaded by wrk (closed loop, its maximum) and
// then by the open-loop generator at half that rate; each phase reports the GC pauses V8 printed
// (scavenges and mark-compacts: count, total, largest) beside the request latency, and how many
// young-generation bytes each request allocated and how many of them lived on into the old
// generation (what feeds the mark-compacts).
//   npm run bench:gc [-- --seconds 6 --semi-space 8 --node-flag=--single-threaded-gc --main <another build>/gateway/main.js]
// A third phase sends the same open loop to the bare uWS reply: the floor the generator and the VM set.
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { GATEWAY_NODE_FLAGS } from '../gateway/node-flags.js';
import { pinProcess, pinnedRedis, spawnPinned, stopChild, wrkLoad, type LoadResult, spawnPinnedGateway } from './harness.js';
import { actionRequests, mintTokens, seedDemo } from './audience.js';
import { openLoop } from './open-loop.js';

const sum = (xs: number[]) => xs.reduce((s, x) => s + x, 0);

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '6' }, 'semi-space': { type: 'string', default: '' }, 'node-flag': { type: 'string', multiple: true, default: [] }, main: { type: 'string', default: '' } } });
const SECONDS = Number(values.seconds);
const flags = [
  ...(values['semi-space'] ? [...GATEWAY_NODE_FLAGS.filter((f) => !f.startsWith('--max-semi-space-size')), `--max-semi-space-size=${values['semi-space']}`] : GATEWAY_NODE_FLAGS),
  ...values['node-flag'], // e.g. --node-flag=--single-threaded-gc
];

interface Pauses {
  scavenges: number[];
  markCompacts: number[];
  /** bytes allocated in the young generation, and promoted to the old one, over the scavenges */
  allocated: number;
  promoted: number;
}

/** The pauses and byte counts in V8's --trace-gc-nvp lines ("pause=3.6 ... gc=s ... allocated=... promoted=..."). */
function pausesOf(trace: string): Pauses {
  const field = (line: string, name: string) => Number(new RegExp(`\\b${name}=([\\d.]+)`).exec(line)?.[1] ?? 0);
  const lines = trace.split('\n').filter((l) => l.includes(' pause='));
  const scavenges = lines.filter((l) => l.includes(' gc=s '));
  return {
    scavenges: scavenges.map((l) => field(l, 'pause')),
    markCompacts: lines.filter((l) => / gc=m[cs] /.test(l)).map((l) => field(l, 'pause')),
    allocated: sum(scavenges.map((l) => field(l, 'allocated'))),
    promoted: sum(scavenges.map((l) => field(l, 'promoted'))),
  };
}

const describe = (xs: number[]) => `${xs.length} (total ${sum(xs).toFixed(0)} ms, mean ${(sum(xs) / Math.max(1, xs.length)).toFixed(1)}, max ${Math.max(0, ...xs).toFixed(1)} ms)`;

async function main(): Promise<void> {
  await pinProcess(1);
  const redis = await pinnedRedis(1);
  try {
    const key = await seedDemo(redis.url);
    const gw = await spawnPinnedGateway(redis.url, { nodeArgs: [...flags, '--trace-gc-nvp'], ...(values.main ? { main: values.main } : {}) });
    let trace = '';
    gw.child.stdout!.on('data', (d: Buffer) => (trace += d.toString()));
    const url = gw.url;
    const requests = actionRequests(await mintTokens(url, key.apiKey, key.layoutId, 2000), key.layoutId);
    await wrkLoad({ name: 'warm-up', url, connections: 100, durationSec: 2, serverPid: gw.child.pid!, requests });
    const phases: { name: string; result: LoadResult; pauses: Pauses }[] = [];
    trace = '';
    const full = await wrkLoad({ name: 'closed loop (wrk, 100 connections)', url, connections: 100, durationSec: SECONDS, serverPid: gw.child.pid!, requests });
    phases.push({ name: full.name, result: full, pauses: pausesOf(trace) });
    const half = Math.round(full.requestsPerSec / 2);
    trace = '';
    const open = await openLoop({ name: `open loop at half (${half}/s)`, url, rate: half, durationSec: SECONDS, connections: 100, requests });
    phases.push({ name: open.name, result: open, pauses: pausesOf(trace) });
    await stopChild(gw.child);
    // The same open loop against the bare reply: the tail of the generator, Redis's core and the VM alone.
    const bare = await spawnPinned(0, fileURLToPath(new URL('./bare-uws.js', import.meta.url)), ['0', '--read-body'], {}, /listening (\d+)/);
    const floor = await openLoop({ name: `the same open loop against the bare reply (reads the body)`, url: `http://127.0.0.1:${bare.match[1]}`, rate: half, durationSec: SECONDS, connections: 100, requests });
    phases.push({ name: floor.name, result: floor, pauses: { scavenges: [], markCompacts: [], allocated: 0, promoted: 0 } });
    await stopChild(bare.child);

    const os = await import('node:os');
    const out = [`machine: ${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}), Node ${process.version}; gateway flags ${flags.join(' ')}; ${SECONDS} s a phase`, ''];
    out.push('| phase | req/s | latency p50 / p99 / max ms | scavenges | mark-compacts | GC ms per second | GC µs per request | young bytes allocated / promoted per request |');
    out.push('|---|---|---|---|---|---|---|---|');
    for (const p of phases) {
      const gcMs = sum(p.pauses.scavenges) + sum(p.pauses.markCompacts);
      out.push(
        `| ${p.name} | ${Math.round(p.result.requestsPerSec)} | ${p.result.latencyMs.p50.toFixed(2)} / ${p.result.latencyMs.p99.toFixed(2)} / ${p.result.latencyMs.max.toFixed(2)} | ${describe(p.pauses.scavenges)} | ${describe(p.pauses.markCompacts)} | ${(gcMs / SECONDS).toFixed(0)} | ${((gcMs * 1000) / p.result.total).toFixed(2)} | ${Math.round(p.pauses.allocated / p.result.total)} / ${Math.round(p.pauses.promoted / p.result.total)} |`,
      );
    }
    process.stdout.write(`\n${out.join('\n')}\n`);
  } finally {
    await redis.stop();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`bench:gc: ${String(e)}\n`);
  process.exit(1);
});
