// Where the gateway's CPU and allocations go under /action load: the gateway runs with its unit's
// flags on core 0, warmed up by wrk, then profiled (bench/profiler-preload.ts: V8's CPU profiler,
// or with --heap its sampling heap profiler) while wrk loads it for a fixed time. The profile is
// summarised as the functions with the most self time (or bytes allocated), with their file and
// line. The raw profile stays in var/profile/ for Chrome DevTools. With --live the load is action
// frames over 100 live sockets, 8 in flight each (the live scenario's action load), instead of wrk.
//   npm run bench:lab -- profile [--seconds 8 --heap | --promoted --live]
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { GATEWAY_NODE_FLAGS } from '../gateway/node-flags.js';
import { pinProcess, pinnedRedis, stopChild, wrkLoad, spawnPinnedGateway } from './harness.js';
import { actionRequests, mintTokens, seedDemo } from './audience.js';
import { socketActions } from './live-action-load.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '8' }, heap: { type: 'boolean', default: false }, promoted: { type: 'boolean', default: false }, top: { type: 'string', default: '30' }, live: { type: 'boolean', default: false } } });
const DIST = fileURLToPath(new URL('..', import.meta.url));
const OUT = join(DIST, '..', 'var', 'profile');

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

/** Self figures per function (name, file, line), summed over the profile's nodes. */
function tally(rows: { frame: CallFrame; self: number }[]): { name: string; self: number }[] {
  const byFn = new Map<string, number>();
  for (const { frame, self } of rows) {
    const file = frame.url.startsWith('file:') ? relative(DIST, fileURLToPath(frame.url)) : frame.url;
    const name = `${frame.functionName || '(anonymous)'}${file ? ` ${file}:${frame.lineNumber + 1}` : ''}`;
    byFn.set(name, (byFn.get(name) ?? 0) + self);
  }
  return [...byFn].map(([name, self]) => ({ name, self })).sort((a, b) => b.self - a.self);
}

/** A .cpuprofile's self time per function (its samples times the mean interval). */
function cpuRows(file: string): { frame: CallFrame; self: number }[] {
  const p = JSON.parse(readFileSync(file, 'utf8')) as { nodes: { id: number; callFrame: CallFrame }[]; samples: number[]; startTime: number; endTime: number };
  const counts = new Map<number, number>();
  for (const s of p.samples) counts.set(s, (counts.get(s) ?? 0) + 1);
  const interval = (p.endTime - p.startTime) / Math.max(1, p.samples.length); // µs
  return p.nodes.map((n) => ({ frame: n.callFrame, self: (counts.get(n.id) ?? 0) * interval }));
}

/** A .heapprofile's bytes allocated per function (sampled). */
function heapRows(file: string): { frame: CallFrame; self: number }[] {
  interface Node {
    callFrame: CallFrame;
    selfSize: number;
    children: Node[];
  }
  const p = JSON.parse(readFileSync(file, 'utf8')) as { head: Node };
  const rows: { frame: CallFrame; self: number }[] = [];
  const walk = (n: Node) => {
    rows.push({ frame: n.callFrame, self: n.selfSize });
    n.children.forEach(walk);
  };
  walk(p.head);
  return rows;
}

async function main(): Promise<void> {
  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(OUT, { recursive: true });
  await pinProcess(1);
  const redis = await pinnedRedis(1);
  try {
    const key = await seedDemo(redis.url);
    const profiler = ['--import', fileURLToPath(new URL('./profiler-preload.js', import.meta.url))];
    if (values.promoted) values.heap = true;
    const file = values.heap ? 'allocations.heapprofile' : 'cpu.cpuprofile';
    const env = { PROFILE_KIND: values.promoted ? 'promoted' : values.heap ? 'heap' : 'cpu', PROFILE_OUT: join(OUT, file) };
    const gw = await spawnPinnedGateway(redis.url, { nodeArgs: [...GATEWAY_NODE_FLAGS, ...profiler], env });
    const url = gw.url;
    const tokens = await mintTokens(url, key.apiKey, key.layoutId, 2000);
    const requests = actionRequests(tokens, key.layoutId);
    const bodies = requests.map((r) => {
      const { layoutId: _, ...b } = JSON.parse(r.body!) as Record<string, unknown>;
      return b;
    });
    const load = async (name: string, durationSec: number) => {
      if (!values.live) return wrkLoad({ name, url, connections: 100, durationSec, serverPid: gw.child.pid!, requests });
      const r = await socketActions({ url, pid: gw.child.pid!, tokens, bodies, connections: 100, seconds: durationSec, inFlight: 8, rate: 0 });
      return { requestsPerSec: r.perSecond, total: r.acked };
    };
    await load('warm-up', 2);
    gw.child.kill('SIGUSR2'); // the profiler starts now
    const result = await load('profiled', Number(values.seconds));
    await stopChild(gw.child); // the profile is written on exit
    if (!readdirSync(OUT).includes(file)) throw new Error(`no profile was written to ${OUT}`);
    const rows = tally(values.heap ? heapRows(join(OUT, file)) : cpuRows(join(OUT, file)));
    const total = rows.reduce((s, r) => s + r.self, 0);
    const unit = values.heap ? 'sampled bytes allocated' : 'self time';
    const perRequest = values.heap ? `; ${Math.round(total / result.total)} bytes sampled per request` : '';
    const lines = [`${Math.round(result.requestsPerSec)} ${values.live ? 'actions' : 'req'}/s over ${values.seconds} s${perRequest}; ${unit}, top ${values.top}, of ${join('var', 'profile', file)}:`, ''];
    for (const r of rows.slice(0, Number(values.top))) {
      const figure = values.heap ? `${(r.self / 1024).toFixed(0).padStart(8)} KiB` : `${(r.self / 1000).toFixed(0).padStart(7)} ms`;
      lines.push(`${figure} ${((100 * r.self) / total).toFixed(1).padStart(5)} %  ${r.name}`);
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await redis.stop();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`bench:lab -- profile: ${String(e)}\n`);
  process.exit(1);
});
