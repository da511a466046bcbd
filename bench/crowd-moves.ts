// What counting every participant once costs Redis: the same crowd over 4 gateway processes, first
// with every participant staying on its process, then with 10 % of them moving to another process
// each minute (each claim that takes a participant from another process is a move). Side by side
// in one run: Redis's commands a second (INFO commandstats, the commands inside scripts included)
// and its bytes in and out a second (INFO stats), and from their difference the cost of one move.
//   npm run bench:lab -- crowd-moves [--participants 50000 --seconds 60 --every 20]
// Every participant moves a Slider (mean, 60 s window) every `every` seconds over HTTP; the
// gateways share core 0, Redis, this generator and the bridge-less merge core 1.
import { mkdirSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import type { BuiltRequest } from './harness.js';
import { pinProcess, pinnedRedis, spawnPinnedGateway, stopChild } from './harness.js';
import { mintTokens, seedDemo } from './audience.js';
import { openLoop } from './open-loop.js';

const { values } = parseArgs({ options: { participants: { type: 'string', default: '50000' }, seconds: { type: 'string', default: '60' }, every: { type: 'string', default: '20' } } });
const PARTICIPANTS = Number(values.participants);
const SECONDS = Number(values.seconds);
const EVERY = Number(values.every);
const PROCESSES = 4;
const MOVING_PER_MINUTE = 0.1;
const LAYOUT = 'moves-show';
const progress = (what: string) => process.stderr.write(`bench: ${what}\n`);

const layout = {
  layoutId: LAYOUT,
  name: 'Moves',
  activePageId: 'main',
  pages: [{ pageId: 'main', name: 'Main', controls: [{ lid: 2, address: '/002', type: 'Slider', props: { label: 'Level' }, aggregate: { mode: 'mean', windowMs: 60_000 } }] }],
};

interface Counters {
  commands: Map<string, number>;
  bytesIn: number;
  bytesOut: number;
}

async function counters(admin: Redis): Promise<Counters> {
  const commands = new Map<string, number>();
  for (const m of (await admin.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) commands.set(m[1]!, Number(m[2]));
  const stats = await admin.info('stats');
  const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(stats)![1]);
  return { commands, bytesIn: field('total_net_input_bytes'), bytesOut: field('total_net_output_bytes') };
}

function perSecond(a: Counters, b: Counters, seconds: number) {
  const byCommand = new Map<string, number>();
  for (const [name, calls] of b.commands) byCommand.set(name, (calls - (a.commands.get(name) ?? 0)) / seconds);
  const total = [...byCommand.values()].reduce((s, x) => s + x, 0);
  return { total, byCommand, bytesIn: (b.bytesIn - a.bytesIn) / seconds, bytesOut: (b.bytesOut - a.bytesOut) / seconds };
}

const request = (token: string, i: number): BuiltRequest => ({
  method: 'POST',
  path: '/action',
  headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
  body: JSON.stringify({ layoutId: LAYOUT, lid: 2, type: 'Slider', value: (i % 101) / 100 }),
});

/**
 * Each process's requests for one phase, in send order: participant k % P acts at k / rate, through
 * its home process at that time. `moves` gives a participant's move time in the phase (s), or none.
 */
function schedule(tokens: string[], home: Int32Array, moveAt: Float64Array | null): BuiltRequest[][] {
  const rate = PARTICIPANTS / EVERY;
  const lists = Array.from({ length: PROCESSES }, () => [] as BuiltRequest[]);
  for (let k = 0; k < rate * SECONDS; k++) {
    const p = k % PARTICIPANTS;
    const t = k / rate;
    const moved = moveAt !== null && moveAt[p]! <= t;
    lists[(home[p]! + (moved ? 1 : 0)) % PROCESSES]!.push(request(tokens[p]!, k));
  }
  return lists;
}

async function phase(name: string, admin: Redis, urls: string[], lists: BuiltRequest[][]) {
  progress(`${name}: ${SECONDS} s`);
  const before = await counters(admin);
  const started = performance.now();
  const results = await Promise.all(urls.map((url, g) => openLoop({ name: `${name}-${g}`, url, rate: lists[g]!.length / SECONDS, durationSec: SECONDS, connections: 16, requests: lists[g]! })));
  const seconds = (performance.now() - started) / 1000;
  const after = await counters(admin);
  return { ...perSecond(before, after, seconds), actions: results.reduce((s, r) => s + r.requestsPerSec, 0), non2xx: results.reduce((s, r) => s + r.non2xx, 0) };
}

async function main(): Promise<void> {
  await pinProcess(1);
  const redis = await pinnedRedis(1);
  const admin = new Redis(redis.url);
  const gateways: Awaited<ReturnType<typeof spawnPinnedGateway>>[] = [];
  const lines: string[] = [];
  try {
    const seed = await seedDemo(redis.url, 'ac:', [layout]);
    for (let g = 0; g < PROCESSES; g++) gateways.push(await spawnPinnedGateway(redis.url));
    progress(`minting ${PARTICIPANTS} tokens`);
    const tokens = await mintTokens(gateways[0]!.url, seed.apiKey, LAYOUT, PARTICIPANTS, 64);
    const home = Int32Array.from({ length: PARTICIPANTS }, (_, p) => p % PROCESSES);
    const urls = gateways.map((g) => g.url);
    // every participant joins its process once (a claim each), then acts there
    const joined = await phase('join', admin, urls, schedule(tokens, home, null));
    const still = await phase('staying', admin, urls, schedule(tokens, home, null));
    // 10 % a minute move, each at its own time in the phase; the next phase starts from where they are
    const movers = Math.round(PARTICIPANTS * MOVING_PER_MINUTE * (SECONDS / 60));
    const moveAt = new Float64Array(PARTICIPANTS).fill(Infinity);
    for (let i = 0; i < movers; i++) moveAt[Math.floor((i * PARTICIPANTS) / movers)] = (i / movers) * SECONDS;
    const moving = await phase('moving', admin, urls, schedule(tokens, home, moveAt));
    const movesPerSecond = movers / SECONDS;
    const row = (label: string, r: Awaited<ReturnType<typeof phase>>) => {
      const c = (name: string) => Math.round(r.byCommand.get(name) ?? 0);
      return `| ${label} | ${Math.round(r.actions)} | ${Math.round(r.total)} | ${c('evalsha')} | ${c('set')} | ${c('spublish')} | ${Math.round(r.bytesIn)} | ${Math.round(r.bytesOut)} | ${r.non2xx} |`;
    };
    lines.push(`machine: 2 cores, Node ${process.version}; ${PROCESSES} gateway processes on core 0, Redis and the generator on core 1; ${PARTICIPANTS} participants, each moving a Slider (mean, 60 s window) every ${EVERY} s over HTTP; ${SECONDS} s a phase; ${new Date().toISOString().slice(0, 10)}`);
    lines.push('');
    lines.push('| phase | actions/s | Redis commands/s | EVALSHA/s | SET/s (claims) | SPUBLISH/s | bytes in/s | bytes out/s | non-2xx |');
    lines.push('|---|---|---|---|---|---|---|---|---|');
    lines.push(row(`joining (${PARTICIPANTS} join in the phase)`, joined));
    lines.push(row('staying (nobody moves)', still));
    lines.push(row(`moving (${movers} move: 10 % a minute)`, moving));
    lines.push('');
    const perMove = (x: number, y: number) => ((x - y) / movesPerSecond).toFixed(1);
    lines.push(`Per move (moving − staying, over ${movesPerSecond.toFixed(1)} moves/s): ${perMove(moving.total, still.total)} commands, ${perMove(moving.bytesIn, still.bytesIn)} bytes in, ${perMove(moving.bytesOut, still.bytesOut)} bytes out.`);
    const joinsPerSecond = PARTICIPANTS / SECONDS;
    const perJoin = (x: number, y: number) => ((x - y) / joinsPerSecond).toFixed(1);
    lines.push(`Per join (joining − staying, over ${joinsPerSecond.toFixed(1)} joins/s): ${perJoin(joined.total, still.total)} commands, ${perJoin(joined.bytesIn, still.bytesIn)} bytes in, ${perJoin(joined.bytesOut, still.bytesOut)} bytes out.`);
  } finally {
    for (const g of gateways) await stopChild(g.child);
    admin.disconnect();
    await redis.stop();
  }
  const text = `${lines.join('\n')}\n`;
  mkdirSync('bench/results', { recursive: true });
  const file = `bench/results/crowd-moves-${new Date().toISOString().replace(/[:.]/g, '-')}.md`;
  writeFileSync(file, `# bench:lab -- crowd-moves\n\n${text}`);
  process.stdout.write(`${text}\nwritten: ${file}\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(`bench: ${String(e)}\n`);
  process.exit(1);
});
