// Where each server's CPU goes per socket action, with native code and the kernel included. The
// gateway and the bare uWS socket ack run under the live scenario's action load (each on core 0, Redis
// and the load on core 1, 100 sockets, 8 actions in flight each) in interleaved rounds. In each
// round, `perf record -e cpu-clock` samples the server (bench/perf-report.ts), and both servers run
// with --perf-basic-prof so the JavaScript has names. A symbol's µs per action is its share of the
// samples times the round's CPU per action (from /proc). The bench prints medians over the rounds:
// first by part (kernel, JIT code, V8 and Node, libc, uWS), then the symbols where the gateway
// spends the most over the floor.
// With --bare-loads-gateway the floor runs with the gateway's modules loaded (BARE_LOADS_GATEWAY) and
// unused: the same work in a process as big as the gateway's, which tells the cost of the
// gateway's size (a larger heap and string table) from the cost of its code on the hot path.
// With --storing the floor is the storing floor (live-bare-store.ts: each frame appended to a Redis
// stream before its ack), the one the socket action's target is set against.
//   npm run bench:lab -- live-perf [--seconds 6 --rounds 3 --top 30 --rate 0 --window 8 --bare-loads-gateway --storing]
import { cpus, tmpdir } from 'node:os';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { GATEWAY_NODE_FLAGS } from '../gateway/node-flags.js';
import { actionRequests, mintTokens, seedDemo } from './audience.js';
import { medianBy, pinProcess, pinnedRedis, spawnPinned, spawnPinnedGateway, stopChild } from './harness.js';
import { socketActions, type ActionLoadSpec, type SocketLoad } from './live-action-load.js';
import { PARTS, partOf, perfRecord, perfShares, removePerfMap, type SymbolShare } from './perf-report.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '6' },
    rounds: { type: 'string', default: '3' },
    top: { type: 'string', default: '30' },
    rate: { type: 'string', default: '0' },
    window: { type: 'string', default: '8' },
    'bare-loads-gateway': { type: 'boolean', default: false },
    storing: { type: 'boolean', default: false },
  },
});
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);
/** the sockets open and the load settles in this long; perf records from then until a second before the end */
const SETTLE_S = 1;
if (!(SECONDS >= SETTLE_S + 2)) throw new Error(`--seconds must be at least ${SETTLE_S + 2}`);

const DIST = fileURLToPath(new URL('..', import.meta.url)); // dist/
const BARE = join(DIST, 'bench', 'live-bare-uws.js');
const progress = (what: string) => process.stderr.write(`live-perf: ${what}\n`);

interface Side {
  name: string;
  url: string;
  pid: number;
  /** per round: the load's figures and µs per action of each symbol ("dso\tsymbol") */
  rounds: { load: SocketLoad; us: Map<string, number> }[];
}

/** µs per action of each symbol: its share of the samples times the round's CPU per action. */
function perAction(shares: readonly SymbolShare[], usPerAction: number): Map<string, number> {
  const us = new Map<string, number>();
  for (const s of shares) {
    const key = `${s.dso}\t${s.symbol.replace(`file://${DIST}`, '')}`;
    us.set(key, (us.get(key) ?? 0) + (s.percent / 100) * usPerAction);
  }
  return us;
}

/** The median over a side's rounds of what `of` picks out of each. */
function median(side: Side, of: (us: Map<string, number>) => number): number {
  return of(medianBy(side.rounds, (r) => of(r.us)).us);
}

const partTotal = (part: string) => (us: Map<string, number>) => {
  let sum = 0;
  for (const [key, v] of us) if (partOf(key.split('\t')[0]!) === part) sum += v;
  return sum;
};

async function measure(side: Side, load: Omit<ActionLoadSpec, 'url' | 'pid'>, dir: string, round: number): Promise<void> {
  const file = join(dir, `${side.pid}-${round}.data`);
  const running = socketActions({ ...load, url: side.url, pid: side.pid });
  // the load ends (its sockets closed) before a failed recording is reported
  const recorded = sleep(SETTLE_S * 1000).then(() => perfRecord(side.pid, file, SECONDS - SETTLE_S - 1));
  const [loaded, record] = await Promise.allSettled([running, recorded]);
  if (loaded.status === 'rejected') throw loaded.reason;
  if (record.status === 'rejected') throw record.reason;
  const result = loaded.value;
  side.rounds.push({ load: result, us: perAction(await perfShares(file), result.usPerAction) });
}

function report(bare: Side, gw: Side): string {
  const fmt = (n: number) => n.toFixed(3);
  const out = [
    `machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), Node ${process.version}; 100 sockets, ${values.rate === '0' ? `${values.window} actions in flight each` : `${values.rate} actions a second in writes of ${values.window}`}; ${ROUNDS} interleaved rounds of ${SECONDS} s, perf recording ${SECONDS - SETTLE_S - 1} s of each; medians of the rounds`,
    '',
    `| | ${bare.name} | ${gw.name} | gateway − bare |`,
    '|---|---|---|---|',
  ];
  const rate = (s: Side) => medianBy(s.rounds, (r) => r.load.usPerAction).load;
  out.push(`| actions a second | ${Math.round(rate(bare).perSecond)} | ${Math.round(rate(gw).perSecond)} | |`);
  out.push(`| CPU µs an action (/proc) | ${fmt(rate(bare).usPerAction)} | ${fmt(rate(gw).usPerAction)} | ${fmt(rate(gw).usPerAction - rate(bare).usPerAction)} |`);
  for (const part of PARTS) {
    const b = median(bare, partTotal(part));
    const g = median(gw, partTotal(part));
    out.push(`| ${part} | ${fmt(b)} | ${fmt(g)} | ${fmt(g - b)} |`);
  }
  const keys = new Set([...bare.rounds, ...gw.rounds].flatMap((r) => [...r.us.keys()]));
  const rows = [...keys].map((key) => {
    const b = median(bare, (us) => us.get(key) ?? 0);
    const g = median(gw, (us) => us.get(key) ?? 0);
    return { key, b, g };
  });
  rows.sort((x, y) => y.g - y.b - (x.g - x.b));
  out.push('', `the ${values.top} symbols where the gateway spends the most more than the floor, µs an action:`, '', '| where | symbol | bare | gateway | gateway − bare |', '|---|---|---|---|---|');
  for (const { key, b, g } of rows.slice(0, Number(values.top))) {
    const [dso, symbol] = key.split('\t');
    out.push(`| ${partOf(dso!)} | \`${symbol!.slice(0, 110).replaceAll('|', '\\|')}\` | ${fmt(b)} | ${fmt(g)} | ${fmt(g - b)} |`);
  }
  return out.join('\n');
}

async function main(): Promise<void> {
  await pinProcess(1);
  const dir = mkdtempSync(join(tmpdir(), 'live-perf-'));
  const redis = await pinnedRedis(1);
  const stops: (() => Promise<void>)[] = [];
  try {
    const key = await seedDemo(redis.url);
    const gateway = await spawnPinnedGateway(redis.url, { nodeArgs: [...GATEWAY_NODE_FLAGS, '--perf-basic-prof'] });
    stops.push(async () => {
      await stopChild(gateway.child);
      removePerfMap(gateway.child.pid!);
    });
    const tokens = await mintTokens(gateway.url, key.apiKey, key.layoutId, 2000);
    const bodies = actionRequests(tokens, key.layoutId).map((r) => {
      const { layoutId: _, ...b } = JSON.parse(r.body!) as Record<string, unknown>;
      return b;
    });
    const bareEnv: Record<string, string> = {
      ...(values['bare-loads-gateway'] ? { BARE_LOADS_GATEWAY: '1' } : {}),
      ...(values.storing ? { BARE_STORE_URL: redis.url, BARE_STORE_KEY: 'storing-floor' } : {}),
    };
    const bareWs = await spawnPinned(0, BARE, ['0'], bareEnv, /listening (\d+)/, ['--perf-basic-prof'], process.execPath, true);
    stops.push(async () => {
      await stopChild(bareWs.child);
      removePerfMap(bareWs.child.pid!);
    });
    const floorName = values.storing ? 'storing floor' : 'bare uWS socket ack';
    const bare: Side = { name: values['bare-loads-gateway'] ? `${floorName}, the gateway's modules loaded` : floorName, url: `http://127.0.0.1:${bareWs.match[1]!}`, pid: bareWs.child.pid!, rounds: [] };
    const gw: Side = { name: 'gateway', url: gateway.url, pid: gateway.child.pid!, rounds: [] };
    const inFlight = Number(values.window);
    const load = { tokens, bodies, connections: 100, seconds: SECONDS, inFlight, rate: Number(values.rate), perWrite: inFlight };
    progress('warming both up, 2 s each');
    for (const side of [bare, gw]) await socketActions({ ...load, seconds: 2, url: side.url, pid: side.pid });
    for (let round = 1; round <= ROUNDS; round++) {
      for (const side of [bare, gw]) {
        progress(`round ${round} of ${ROUNDS}: ${side.name}, ${SECONDS} s`);
        await measure(side, load, dir, round);
      }
    }
    process.stdout.write(`${report(bare, gw)}\n`);
  } finally {
    for (const stop of stops) await stop();
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`bench:lab -- live-perf: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
