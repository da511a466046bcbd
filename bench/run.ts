// `npm run bench`: the whole suite on this machine, each figure beside its target.
// Gateway on core 0; Redis, the bridge, the load generator and the UDP sink on core 1.
// Writes bench/results/<timestamp>.json and .md, rewrites the figures table (bench/README.md) and
// the sizing table (docs/operations.md) from them, and prints the Markdown.
// `npm run bench -- <scenario> [options]` runs one scenario (SCENARIOS below), hands it the options,
// prints its own output and its rows, and writes nothing: the tables are always one whole run's.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { pinProcess, spawnPinned, stealMeter } from './harness.js';
import { BRIDGE_NODE_FLAGS } from '../bridge/node-flags.js';
import { writeFiguresTable, writeSizingTable } from './figures-table.js';
import { unitFigures } from './sizing.js';
import { liveFigures } from './live-figures.js';
import { CONNECTIONS, httpScenario } from './http-scenario.js';
import { RunRecord, progress } from './run-record.js';
import type { LoadtestResult } from '../loadtest/result.js';

const BRIDGE_BENCH = fileURLToPath(new URL('./bridge.js', import.meta.url));
const SCALE_BENCH = fileURLToPath(new URL('./scale.js', import.meta.url));
const CROWD_BENCH = fileURLToPath(new URL('./crowd.js', import.meta.url));
const REHEARSAL_BENCH = fileURLToPath(new URL('./rehearsal.js', import.meta.url));
const LIVE_BENCH = fileURLToPath(new URL('./live-channel.js', import.meta.url));

const record = new RunRecord();
const { rows, raw, row } = record;

const pctOf = (v: unknown) => `${((v as number) * 100).toFixed(1)} %`;

async function bridgeScenario(args: string[]): Promise<void> {
  await pinProcess(1);
  progress('bridge throughput and tick lateness (bench/bridge.ts)');
  // bench/bridge.ts keeps the bridge's send path to core 0 (sendCpu 0) and its other threads to
  // core 1, as on a venue host given --send-cpu; each row says so.
  const RIG = ', send path on core 0 (--send-cpu 0)';
  // options given replace the two standard rigs with one run of those
  const rigs = args.length > 0 ? [args] : [['--tick-hz', '100', '--per-tick', '1000'], ['--tick-hz', '1000', '--per-tick', '100']];
  for (const rig of rigs) {
    const [tickHz, perTick] = [optionOf(rig, '--tick-hz'), optionOf(rig, '--per-tick')];
    const b = await spawnPinned(0, BRIDGE_BENCH, rig, {}, /ceiling set by pacing/, [...BRIDGE_NODE_FLAGS]);
    // It prints the marker just before stopping its own Redis: let it finish (a SIGTERM here orphaned that redis-server).
    if (b.child.exitCode === null) await new Promise((r) => b.child.once('exit', r));
    told(b.match.input ?? '');
    // Two drains (bench/bridge.ts): a bridge just started, while V8 optimises its code, then the
    // same bridge, running since, handed a second backlog at once.
    const drains = [
      { label: 'drain', key: '', line: /\| drain \d+ queued [^\n]*\| (\d+) \| ([\d.]+) \/ ([\d.]+) \/ ([\d.]+) \|/ },
      { label: 'drain again, warm', key: '_warm', line: /\| drain \d+ again, warm[^\n]*\| (\d+) \| ([\d.]+) \/ ([\d.]+) \/ ([\d.]+) \|/ },
    ];
    for (const { label, key, line } of drains) {
      const m = line.exec(b.match.input ?? '');
      if (!m) {
        row(`bridge ${label}, ${tickHz} Hz, ≤ ${perTick}/tick${RIG}`, 'no figure: bench/bridge.ts printed no such row (its output is above)', '≥ 50k messages/s with lateness p99 ≤ 1 ms', false);
        continue;
      }
      const [rate, p50, p99, max] = [Number(m[1]), Number(m[2]), Number(m[3]), Number(m[4])];
      raw[`bridge_${tickHz}hz${key}`] = { messagesPerSec: rate, latenessMs: { p50, p99, max } };
      row(`bridge ${label}, ${tickHz} Hz, ≤ ${perTick}/tick${RIG}`, `${rate} messages/s, tick lateness p50 ${p50} / p99 ${p99} / max ${max} ms`, '≥ 50k messages/s with lateness p99 ≤ 1 ms', rate >= 50_000 && p99 <= 1);
    }
  }
}

async function crowdScenario(args: string[]): Promise<void> {
  await pinProcess(1);
  progress('crowd aggregation, with and without (bench/crowd.ts)');
  const crowd = await script(CROWD_BENCH, args, 300_000);
  raw.crowd = crowd;
  const maxRow = (layout: string) => new RegExp(`^\\| ${layout} \\([a-z]+\\) \\| (\\d+) \\| (\\d+) \\| ([\\d.]+) \\|`, 'm').exec(crowd);
  const [plainMax, crowdMax] = [maxRow('demo-show'), maxRow('crowd-show')];
  if (plainMax && crowdMax) {
    raw.crowdSummariesPerSec = Number(crowdMax[2]);
    row('crowd aggregation: the most wrk generates into one layout (bench -- crowd)', `aggregated (median): ${crowdMax[1]} actions/s in, ${crowdMax[2]} entries/s into Redis, bridge ${crowdMax[3]} of a core; plain: ${plainMax[1]} actions/s, ${plainMax[2]} entries/s, bridge ${plainMax[3]}`, '≤ 100 entries/s (1000 / 10 ms fold ticks × 1 process)', Number(crowdMax[2]) <= 100);
  }
  const doubling = [...crowd.matchAll(/^\| crowd-show \| (idle, 3 s|\d+\/s) \| [^|]+ \| (\d+) \| [^|]+ \| ([\d.]+) \|$/gm)];
  if (doubling.length === 3) {
    // Idle is reported, not compared: it was once the bridge's floor (a busy-waiting clock, 0.2 of a
    // core), and is near nothing since; a bridge sending crowd bundles every tick costs more than that.
    const [idle, once, twice] = doubling.map((m) => Number(m[3]));
    row('crowd aggregation: bridge CPU as the action rate doubles (bench -- crowd)', `idle ${idle}, ${doubling[1]![1]} ${once}, ${doubling[2]![1]} ${twice} of a core; entries/s ${doubling[1]![2]} and ${doubling[2]![2]}`, 'flat: at 2R within 1.2× of R', twice! <= once! * 1.2);
  }
  for (const m of crowd.matchAll(/aggregated p99 − plain p99 \| \| (-?[\d.]+)/g)) {
    const hz = m.index < crowd.indexOf('| 1000 Hz |') ? 100 : 1000;
    row(`crowd aggregation: end to end at 2,000 presses/s, bridge ${hz} Hz (bench -- crowd)`, `aggregated p99 − plain p99 = ${m[1]} ms`, '≤ 10 ms (one fold tick)', Number(m[1]) <= 10);
  }
  for (const m of crowd.matchAll(/^(\d+) participants, 3 \w+ each over ([^:]+): merged n = (\d+) for \d+ participants: ([\d.-]+) % counted twice/gm)) {
    row('crowd aggregation: counted twice with GATEWAY_WORKERS=2 (bench -- crowd)', `${m[4]} % of ${m[1]} participants whose 3 actions went over ${m[2]} (n = ${m[3]})`, 'report', null);
  }

}

/** 1 and 2 gateway workers, and a Redis Cluster (bench/scale.ts). */
async function scaleScenario(args: string[]): Promise<void> {
  // Not pinned: two workers need both cores, so this process is moved back to both first (its
  // children inherit that).
  await pinProcess('0-1');
  progress('scaling: gateway workers and Redis Cluster (bench/scale.ts)');
  const scale = await script(SCALE_BENCH, args, 300_000);
  for (const m of scale.matchAll(/^\| (POST \/action, [^|]+) \| (\d+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| (\d+) \| (\d+) \|$/gm)) {
    raw[`scale: ${m[1]}`] = { requestsPerSec: Number(m[2]), ratioToOneWorker: Number(m[3]), p50: Number(m[4]), p99: Number(m[5]), non2xx: Number(m[6]), errors: Number(m[7]) };
    row(`${m[1]}, wrk (bench -- scale)`, `${m[2]} req/s = ${m[3]}× one worker on one Redis, p50 ${m[4]} / p99 ${m[5]} ms, non-2xx ${m[6]}`, 'report: a 2-core machine shares its cores with wrk and Redis', null);
  }
  const master = /one Redis master, one layout's stream: (\d+) entries\/s[^(]*\(([^)]*)\)/.exec(scale);
  if (master) {
    raw.redisMasterEntriesPerSec = Number(master[1]);
    row("one Redis master, one layout's stream (bench -- scale)", `${master[1]} entries/s appended (${master[2]})`, 'report: the ceiling of one show', null);
  }

}

/** The live channel against bare uWebSockets.js, side by side (bench/live-channel.ts; it pins its own parts). */
async function liveScenario(args: string[]): Promise<void> {
  await pinProcess('0-1');
  progress('the live channel against bare uWS (bench/live-channel.ts)');
  const live = await script(LIVE_BENCH, args, 900_000);
  const channel = liveFigures(live);
  raw.live = channel;
  // each live target as bench/live-channel.ts judged it: a ratio to bare uWS in the same run, or a bound
  const liveTargets = [...live.matchAll(/^(.+): ([\d.]+) \(target ([≤≥<]) ([\d.]+): (met|NOT met)\)(?:; (.*))?$/gm)];
  for (const m of liveTargets) row(`live channel: ${m[1]} (bench -- live)`, `${m[2]}${m[6] ? ` (${m[6]})` : ''}`, `${m[3]} ${m[4]}`, m[5] === 'met');
  if (liveTargets.length === 0) row('live channel: its targets (bench -- live)', 'no figure: bench/live-channel.ts printed no target line', 'every live target', false);
  row('live channel: gateway CPU per action, a socket against POST /action (bench -- live)', `${channel.socketUs} µs against ${channel.postUs} µs (${(channel.socketUs / channel.postUs).toFixed(2)}×); the storing floor ${channel.storingSocketUs} µs (${(channel.socketUs / channel.storingSocketUs).toFixed(2)}×), the bare uWS socket ack ${channel.bareSocketUs} µs (${(channel.socketUs / channel.bareSocketUs).toFixed(2)}×)`, 'report', null);
  if (channel.kib && channel.crowdUs && channel.switchP99) {
    row(`live channel: ${channel.sockets} sockets against bare uWS (bench -- live)`, `memory per socket ${channel.kib[1]} KiB (bare ${channel.kib[0]}); crowd frame ${channel.crowdUs[1]} µs (bare ${channel.crowdUs[0]}); page switch p99 ${channel.switchP99[1]} ms (bare ${channel.switchP99[0]})`, 'report', null);
  } else {
    row('live channel: sockets against bare uWS (bench -- live)', 'no figure: bench/live-channel.ts printed no socket table', 'report', null);
  }

}

/**
 * The crowd and the page-switch fan-out as a show plays them: bench-show.json played by
 * audience-loadtest (the rehearsal tool, its crowd model and latency method) against the gateway.
 */
async function rehearsalScenario(args: string[]): Promise<void> {
  await pinProcess('0-1');
  progress('a rehearsed show: bench-show.json through audience-loadtest (bench/rehearsal.ts)');
  const rehearsal = await script(REHEARSAL_BENCH, args, 300_000);
  const resultFile = /^result: (.+)$/m.exec(rehearsal)?.[1];
  if (resultFile) {
    const r = JSON.parse(readFileSync(resultFile, 'utf8')) as LoadtestResult;
    const m = (name: string) => r.metrics[name];
    const fig = (name: string) => (m(name) ? `p50 ${m(name)!.p50} / p99 ${m(name)!.p99} / max ${m(name)!.max} ms (${m(name)!.count})` : 'none measured');
    raw.rehearsal = { verdict: r.verdict, counts: r.counts, thresholds: r.thresholds, lagP99Ms: r.generator.lagP99Ms };
    const show = `${r.counts.phones} phones, ${r.counts.actions} actions (rehearsal)`;
    row(`a show, ${show}: ack from the planned moment`, `${fig('ack_ms')}; socket ${fig('ack_ms{transport=socket,type=Button}')} (Button), http ${fig('ack_ms{transport=http,type=Button}')} (Button)`, 'p99 < 250 ms (bench-show.json)', r.thresholds.find((t) => t.metric === 'ack_ms')?.ok ?? false);
    row(`a show, ${show}: page switch to every socket`, fig('page_switch_ms'), 'p99 < 500 ms (bench-show.json)', r.thresholds.find((t) => t.metric === 'page_switch_ms')?.ok ?? false);
    row(`a show, ${show}: action to display (String, at the venue end)`, `${fig('display_ms')}; ${r.counts.display_lost} stored and lost`, 'p99 < 100 ms, none lost (bench-show.json)', r.thresholds.filter((t) => t.metric.startsWith('display_')).every((t) => t.ok));
    row(`a show, ${show}: the verdict`, `${r.verdict}; errors ${r.counts.errors}, sockets ${r.counts.sockets_opened} opened / ${r.counts.socket_failures} failed, ${r.counts.reconnects} reconnects; generator lag p99 ${r.generator.lagP99Ms} ms`, 'pass, generator valid', r.verdict === 'pass');
  } else {
    row('a show (rehearsal)', 'no result: bench/rehearsal.ts printed none (its output is above)', 'pass', false);
  }

}

/** The scenarios in the order a whole run plays them; `npm run bench -- <name>` runs one. */
const SCENARIOS: Record<string, { what: string; run(args: string[]): Promise<void> }> = {
  http: { what: 'POST /action against the bare uWS reply (the target ratio), /token, /layout, half the maximum rate, end to end through the bridge, gateway memory (bench/http-scenario.ts)', run: () => httpScenario(record) },
  bridge: { what: 'bridge throughput and tick lateness (bench/bridge.ts; options replace its two rigs)', run: bridgeScenario },
  crowd: { what: 'crowd aggregation, with and without (bench/crowd.ts)', run: crowdScenario },
  scale: { what: 'gateway workers and Redis Cluster (bench/scale.ts)', run: scaleScenario },
  live: { what: 'the live channel against bare uWS and the storing floor (bench/live-channel.ts; --only, --seconds, ...)', run: liveScenario },
  rehearsal: { what: 'a rehearsed show through audience-loadtest (bench/rehearsal.ts)', run: rehearsalScenario },
};

/** Prints a scenario script's own output on a one-scenario run (a whole run keeps it in its result). */
let told = (_output: string): void => {};

/** Runs a scenario's script in its own process and returns its standard output. */
async function script(file: string, args: string[], timeoutMs: number): Promise<string> {
  const { stdout } = await promisify(execFile)(process.execPath, [file, ...args], { maxBuffer: 1 << 22, timeout: timeoutMs });
  told(stdout);
  return stdout;
}

/** The value after `name` in a list of options, or '?'. */
function optionOf(args: string[], name: string): string {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1]! : '?';
}

async function main(): Promise<void> {
  const [only, ...args] = process.argv.slice(2);
  if (only !== undefined) {
    const scenario = SCENARIOS[only];
    if (!scenario) {
      process.stderr.write(`bench: no scenario "${only}"; the scenarios:\n${Object.entries(SCENARIOS).map(([name, s]) => `  ${name.padEnd(10)} ${s.what}`).join('\n')}\n`);
      process.exit(2);
    }
    told = (output) => process.stdout.write(output);
    await scenario.run(args);
    process.stdout.write(`\n${markdownRows()}\n\none scenario: no result written, the tables are unchanged (they are a whole run's: npm run bench)\n`);
    return;
  }
  const startedAt = new Date();
  const measuring = commitMeasured(); // the code as it is when the run starts
  const stealRun = stealMeter();
  for (const scenario of Object.values(SCENARIOS)) await scenario.run([]);

  // What one unit of each part costs or carries: the sizing table's inputs (bench/sizing.ts).
  const channel = raw.live as ReturnType<typeof liveFigures>;
  const memory = raw.memory as { tokens: number; rssMiB: number } | undefined;
  const drains = Object.entries(raw).filter(([k]) => k.startsWith('bridge_')).map(([, v]) => (v as { messagesPerSec: number }).messagesPerSec);
  raw.units = {
    liveActionCpuUs: channel.socketUs,
    crowdFrameCpuUs: channel.crowdUs?.[1],
    bytesPerSocket: channel.kib ? channel.kib[1]! * 1024 : undefined,
    gatewayRssMiB: memory?.rssMiB,
    tokensCached: memory?.tokens,
    redisEntriesPerSec: raw.redisMasterEntriesPerSec,
    bridgeMessagesPerSec: drains.length > 0 ? Math.min(...drains) : undefined,
    summariesPerSecPerProcess: raw.crowdSummariesPerSec,
    actionEntryBytes: (raw.entryBytes as { action?: number } | undefined)?.action,
    summaryEntryBytes: (raw.entryBytes as { summary?: number } | undefined)?.summary,
  };

  const md = [
    `# Bench results ${startedAt.toISOString()}`,
    '',
    `Machine: ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), Node ${process.version}. Command: \`npm run bench\`. Gateway on core 0; Redis (AOF on), bridge, load generator and UDP sink on core 1; ${CONNECTIONS} connections, no pipelining. Fixed rates are open loop (bench/open-loop.ts).`,
    '',
    `Host CPU steal (time the hypervisor gave to other guests): ${pctOf(raw.hostStealDuringPairs)} during the wrk pairs (bare reply and /action), ${pctOf(stealRun())} over the whole run. Above a few per cent, every figure is pessimistic.`,
    '',
    markdownRows(),
    '',
  ].join('\n');
  mkdirSync('bench/results', { recursive: true });
  const stamp = startedAt.toISOString().replace(/[:.]/g, '-');
  const file = `bench/results/${stamp}.json`;
  const result = { startedAt: startedAt.toISOString(), commit: await measuring, machine: `${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), Node ${process.version}, ${await redisVersion()}, host steal ${pctOf(stealRun())}`, rows };
  writeFileSync(file, `${JSON.stringify({ ...result, raw }, null, 2)}\n`);
  writeFileSync(`bench/results/${stamp}.md`, md);
  writeFiguresTable('bench/README.md', result, file);
  writeSizingTable('docs/operations.md', unitFigures(raw), { file, ...result });
  process.stdout.write(`${md}\nwritten: ${file} and .md; bench/README.md's table of figures is this run's\n`);
}

/** The rows measured so far, as a Markdown table. */
function markdownRows(): string {
  return [
    '| scenario | measured | target | met |',
    '|---|---|---|---|',
    ...rows.map((r) => `| ${r.scenario} | ${r.figure} | ${r.target} | ${r.met === null ? '-' : r.met ? 'yes' : '**no**'} |`),
  ].join('\n');
}

/** The commit measured, "+changes" when the work tree differs from it. */
async function commitMeasured(): Promise<string> {
  const git = (...args: string[]) => promisify(execFile)('git', args).then((r) => r.stdout.trim(), () => '');
  const sha = await git('rev-parse', '--short', 'HEAD');
  return sha === '' ? 'unknown' : `${sha}${(await git('status', '--porcelain', '--untracked-files=no')) === '' ? '' : '+changes'}`;
}

async function redisVersion(): Promise<string> {
  return promisify(execFile)('redis-server', ['--version']).then((r) => `Redis ${/v=([\d.]+)/.exec(r.stdout)?.[1] ?? '?'}`, () => 'Redis ?');
}

main().catch((e: unknown) => {
  process.stderr.write(`bench: ${String(e)}\n`);
  process.exit(1);
});
