// The bench's crowd and fan-out scenario, played by audience-loadtest (the rehearsal tool) against
// a gateway this bench starts: the same crowd model and the same latency method an SRE uses
// against a real deployment. bench/scenarios/bench-show.json: 2,000 phones arrive, play, vote on
// a page switch, come back, reconnect in a storm and play on; a bridge sends the layout to the
// tool's venue end (--osc-listen), so String actions are timed to the display.
//   npm run bench -- rehearsal [--parts 2 --workers 2]   (writes bench/results/rehearsal-<time>.md and .json)
// The gateway runs GATEWAY_WORKERS processes over both cores; Redis and the bridge on core 1; the
// tool as `parts` processes (--part k/n), each from its own source address 127.0.0.2, .3, ...,
// merged into one result. The bench is the operator: it switches the page at each cue phase.
import { spawn } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { cpuSeconds, pinnedRedis, stopChild } from './harness.js';
import { spawnBenchBridge } from './action-to-display.js';
import { gatewayTarget } from './live-servers.js';
import { loadScenario } from '../loadtest/scenario.js';
import { mergeResults } from '../loadtest/result.js';
import { summaryText } from '../loadtest/report.js';

const { values } = parseArgs({ options: { parts: { type: 'string', default: '2' }, workers: { type: 'string', default: '2' } } });
const PARTS = Number(values.parts);
const WORKERS = Number(values.workers);
export const SCENARIO_FILE = fileURLToPath(new URL('../../bench/scenarios/bench-show.json', import.meta.url));
const LOADTEST = fileURLToPath(new URL('../loadtest/main.js', import.meta.url));
/** The operator switches this long after a cue phase begins on the bench's clock (the tools start a moment later). */
const SWITCH_AFTER_S = 1.5;
const progress = (what: string) => process.stderr.write(`bench: ${what}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function freeUdpPort(): Promise<number> {
  const s = createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', r));
  const { port } = s.address();
  s.close();
  return port;
}

async function main(): Promise<void> {
  const { scenario } = loadScenario(SCENARIO_FILE);
  const redis = await pinnedRedis(1);
  const target = await gatewayTarget(redis.url, WORKERS);
  const oscPort = await freeUdpPort();
  const bridge = await spawnBenchBridge({ redisUrl: redis.url, layoutId: scenario.layoutId, port: oscPort, tickHz: 100, id: 'rehearsal' });
  const dir = mkdtempSync(join(tmpdir(), 'bench-rehearsal-'));
  const outs = Array.from({ length: PARTS }, (_, k) => join(dir, `part-${k + 1}.json`));
  try {
    await target.switchTo('main');
    progress(`${scenario.phases.reduce((s, p) => s + p.durationS, 0)} s of bench-show.json from ${PARTS} audience-loadtest processes against ${target.name}`);
    const cpu0 = target.pids.map(cpuSeconds);
    const t0 = Date.now();
    const tools = outs.map((out, k) =>
      spawn(
        process.execPath,
        [LOADTEST, 'run', SCENARIO_FILE, '--target', target.url, '--part', `${k + 1}/${PARTS}`, '--source-addresses', `127.0.0.${2 + k}`, '--quiet', '--out', out, ...(k === 0 ? ['--osc-listen', `127.0.0.1:${oscPort}`] : [])],
        { env: { ...process.env, AUDIENCE_API_KEY: target.apiKey }, stdio: ['ignore', 'ignore', 'inherit'] },
      ),
    );
    const ended = Promise.all(tools.map((t) => new Promise<number | null>((r) => t.once('exit', r))));
    // the operator: each cue phase's page, switched a moment after the phase begins
    let at = 0;
    for (const phase of scenario.phases) {
      if (phase.onPage) {
        await sleep(Math.max(0, t0 + (at + SWITCH_AFTER_S) * 1000 - Date.now()));
        await target.switchTo(phase.onPage);
      }
      at += phase.durationS;
    }
    const codes = await ended;
    const elapsed = (Date.now() - t0) / 1000;
    const gatewayCores = target.pids.reduce((n, p, i) => n + (cpuSeconds(p) - cpu0[i]!) / elapsed, 0);
    const merged = mergeResults(outs);
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    mkdirSync('bench/results', { recursive: true });
    const json = `bench/results/rehearsal-${stamp}.json`;
    writeFileSync(json, `${JSON.stringify({ ...merged, gatewayCores, exitCodes: codes }, null, 2)}\n`);
    const text = [
      `machine: 2 cores, Node ${process.version}; ${target.name} over both cores, Redis and a 100 Hz bridge on core 1; ${PARTS} audience-loadtest processes (exit codes ${codes.join(', ')}), merged`,
      `gateway CPU over the run: ${gatewayCores.toFixed(2)} cores (all its processes)`,
      '',
      '```',
      summaryText(merged).trimEnd(),
      '```',
    ].join('\n');
    writeFileSync(json.replace(/\.json$/, '.md'), `# bench -- rehearsal\n\n${text}\n`);
    process.stdout.write(`${text}\n\nresult: ${json}\n`);
  } finally {
    await stopChild(bridge.child);
    await target.stop();
    await redis.stop();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`bench: ${String(e)}\n`);
  process.exit(1);
});
