// Where the socket action's microseconds go above its floor: the gateway, three copies of its build
// that each take out one more step (bench/action-ablation-edits.ts, LIVE_ABLATIONS), and the bare
// uWS socket ack, all held at once and loaded in turn in interleaved rounds, as bench:live's action
// rounds load them: each process on core 0, Redis and the load on core 1, 100 sockets with 8
// actions in flight each, server CPU µs per acked action. What one build lacks against the build
// before it is the cost of the step it takes out. The storing floor, the bare ack that appends each
// frame to a Redis stream before it acks it (live-bare-store.ts), is loaded in the same rounds, and
// the gateway is read against it too: the least the job takes once every action is stored.
//   npm run bench:live-ablation [-- --seconds 5 --rounds 3]
import { cpus } from 'node:os';
import { join } from 'node:path';
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { LIVE_ABLATIONS, ablatedCopy, cumulative } from './action-ablation-edits.js';
import { actionRequests, mintTokens, seedDemo } from './audience.js';
import { medianBy, pinProcess, pinnedRedis, spawnPinned, spawnPinnedGateway, stopChild } from './harness.js';
import { socketActions, type SocketLoad } from './live-action-load.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '5' }, rounds: { type: 'string', default: '3' } } });
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);
const CONNECTIONS = 100;
const IN_FLIGHT = 8;

const DIST = fileURLToPath(new URL('..', import.meta.url)); // dist/
const VARIANTS = join(DIST, '..', 'var', 'live-ablation');
const BARE_LIVE = join(DIST, 'bench', 'live-bare-uws.js');
const progress = (what: string) => process.stderr.write(`live-ablation: ${what}\n`);

interface Target {
  name: string;
  what: string;
  url: string;
  pid: number;
  rounds: SocketLoad[];
}

async function main(): Promise<void> {
  await pinProcess(1);
  const builds = cumulative(LIVE_ABLATIONS).map((a) => ({ a, main: ablatedCopy(DIST, join(VARIANTS, a.name), a) })); // every edit applies, before minutes of measuring
  const redis = await pinnedRedis(1);
  const stops: (() => Promise<void>)[] = [];
  try {
    const key = await seedDemo(redis.url);
    const targets: Target[] = [];
    const gateway = await spawnPinnedGateway(redis.url);
    stops.push(() => stopChild(gateway.child));
    targets.push({ name: 'gateway', what: 'the gateway as it ships', url: gateway.url, pid: gateway.child.pid!, rounds: [] });
    for (const { a, main } of builds) {
      const gw = await spawnPinnedGateway(redis.url, { main });
      stops.push(() => stopChild(gw.child));
      targets.push({ name: a.name, what: `without ${a.step}`, url: gw.url, pid: gw.child.pid!, rounds: [] });
    }
    const bare = await spawnPinned(0, BARE_LIVE, ['0'], {}, /listening (\d+)/, [], process.execPath, true);
    stops.push(() => stopChild(bare.child));
    targets.push({ name: 'bare', what: 'bare uWS socket ack (the floor)', url: `http://127.0.0.1:${bare.match[1]!}`, pid: bare.child.pid!, rounds: [] });
    const storing = await spawnPinned(0, BARE_LIVE, ['0'], { BARE_STORE_URL: redis.url, BARE_STORE_KEY: 'bare-live' }, /listening (\d+)/, [], process.execPath, true);
    stops.push(() => stopChild(storing.child));
    const stored: Target = { name: 'bare-store', what: 'the storing floor: the bare ack sent once the frame is in a Redis stream', url: `http://127.0.0.1:${storing.match[1]!}`, pid: storing.child.pid!, rounds: [] };
    const loaded = [...targets, stored];

    const tokens = await mintTokens(gateway.url, key.apiKey, key.layoutId, 2000);
    const bodies = actionRequests(tokens, key.layoutId, 10_000).map((r) => {
      const { layoutId: _, ...b } = JSON.parse(r.body!) as Record<string, unknown>;
      return b;
    });
    const load = (t: Target, seconds: number) => socketActions({ url: t.url, pid: t.pid, tokens, bodies, connections: CONNECTIONS, seconds, inFlight: IN_FLIGHT, rate: 0 });
    for (const t of loaded) {
      progress(`warming ${t.name}`);
      await load(t, 2);
    }
    for (let round = 1; round <= ROUNDS; round++) {
      // each round in the other order, so a drifting host favours no build
      const order = round % 2 === 1 ? loaded : [...loaded].reverse();
      for (const t of order) {
        progress(`round ${round} of ${ROUNDS}: ${t.name}, ${SECONDS} s`);
        t.rounds.push(await load(t, SECONDS));
      }
    }

    const floor = targets.at(-1)!;
    const us = (t: Target, i: number) => t.rounds[i]!.usPerAction;
    const median = (xs: number[]) => medianBy(xs, (x) => x);
    const fmt = (xs: number[]) => xs.map((x) => x.toFixed(2)).join(', ');
    const out: string[] = [];
    out.push(`machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), Node ${process.version}; ${CONNECTIONS} sockets, ${IN_FLIGHT} actions in flight each, the demo's plain controls; ${ROUNDS} interleaved rounds of ${SECONDS} s; every build on core 0, Redis and the load on core 1`);
    out.push('');
    out.push('| build | µs/action (rounds) | median | / floor (median of the rounds) | share of a core | µs/action in the kernel (median) |');
    out.push('|---|---|---|---|---|---|');
    for (const t of loaded) {
      const each = t.rounds.map((_, i) => us(t, i));
      const ratios = t.rounds.map((_, i) => us(t, i) / us(floor, i));
      out.push(`| ${t.name}: ${t.what} | ${fmt(each)} | ${median(each).toFixed(2)} | ${median(ratios).toFixed(2)} | ${median(t.rounds.map((r) => r.cpuShare)).toFixed(2)} | ${median(t.rounds.map((r) => r.systemUsPerAction)).toFixed(2)} |`);
    }
    out.push('');
    out.push('| step | µs/action (rounds) | median |');
    out.push('|---|---|---|');
    for (let k = 0; k + 1 < targets.length; k++) {
      const [a, b] = [targets[k]!, targets[k + 1]!];
      const step = k + 1 < targets.length - 1 ? LIVE_ABLATIONS[k]!.step : "the gateway's socket against the bare one, doing the same (its uWS app, its timers and Redis links)";
      const deltas = a.rounds.map((_, i) => us(a, i) - us(b, i));
      out.push(`| ${step} | ${fmt(deltas)} | ${median(deltas).toFixed(2)} |`);
    }
    const overStored = targets[0]!.rounds.map((r, i) => r.usPerAction / stored.rounds[i]!.usPerAction);
    out.push('');
    out.push(`CPU per socket action, gateway / the storing floor: ${median(overStored).toFixed(2)} (rounds ${fmt(overStored)})`);
    process.stdout.write(`\n${out.join('\n')}\n`);
  } finally {
    for (const stop of stops.reverse()) await stop();
    await redis.stop();
    rmSync(VARIANTS, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`live-ablation: ${String(e)}\n`);
  process.exit(1);
});
