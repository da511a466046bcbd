#!/usr/bin/env node
// audience-loadtest: rehearse a show against a real deployment through its public API only.
//   AUDIENCE_API_KEY=<keyId>.<secret> audience-loadtest run scenario.json --target https://gw.example [--out result.json] [--quiet]
//   audience-loadtest merge a.json b.json ... [--out merged.json]
// Exit codes: 0 pass, 99 a threshold failed, 104 bad configuration, 105 interrupted, 106 the
// generator was overloaded (the result is invalid).
import { writeFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { EXIT, LoadtestError } from './errors.js';
import { summaryText } from './report.js';
import { buildResult, mergeResults, type LoadtestResult } from './result.js';
import { runScenario } from './runner.js';
import { loadScenario, partOf } from './scenario.js';

interface RunFlags {
  target: string;
  out?: string;
  quiet?: boolean;
  sourceAddresses?: string;
  part?: string;
  oscListen?: string;
  display?: string;
}

function finish(result: LoadtestResult, out: string | undefined): number {
  if (out) writeFileSync(out, `${JSON.stringify(result, null, 1)}\n`);
  process.stdout.write(summaryText(result));
  if (result.interrupted) return EXIT.interrupted;
  return result.verdict === 'pass' ? EXIT.pass : result.verdict === 'fail' ? EXIT.fail : EXIT.invalid;
}

async function run(file: string, opts: RunFlags): Promise<number> {
  const loaded = loadScenario(file).scenario;
  const scenario = opts.part ? partOf(loaded, opts.part) : loaded;
  const apiKey = process.env.AUDIENCE_API_KEY ?? '';
  if (!/^[^.\s]+\.[^.\s]+$/.test(apiKey)) throw new LoadtestError('config', 'AUDIENCE_API_KEY must hold the API key (<keyId>.<secret>); it is never taken as a flag');
  let target: URL;
  try {
    target = new URL(opts.target);
    if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new Error('not http(s)');
  } catch {
    throw new LoadtestError('config', `--target ${opts.target}: an http:// or https:// URL of the gateway`);
  }
  if (opts.display !== undefined && opts.oscListen !== undefined && opts.display !== opts.oscListen) throw new LoadtestError('config', '--display and --osc-listen name the same display watcher: give one of them');
  if (opts.display !== undefined && opts.part) throw new LoadtestError('config', '--display checks the whole crowd: one run plays it, not a --part of it');
  const stop = new AbortController();
  const interrupt = () => stop.abort();
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  const tty = process.stderr.isTTY && !opts.quiet && process.env.CI === undefined;
  const startedAt = new Date().toISOString();
  const outcome = await runScenario({
    scenario,
    target,
    apiKey,
    sourceAddresses: opts.sourceAddresses ? opts.sourceAddresses.split(',').map((a) => a.trim()).filter(Boolean) : [],
    oscListen: opts.display ?? opts.oscListen ?? null,
    checkCrowd: opts.display !== undefined,
    progress: tty ? (line) => process.stderr.write(`\r${line}\u001b[K`) : null,
    signal: stop.signal,
  });
  if (tty) process.stderr.write('\n');
  return finish(buildResult(outcome.metrics, { target: target.origin, startedAt, durationS: outcome.durationS, parts: 1, scenario, interrupted: outcome.interrupted, crowd: outcome.crowd, crowdSamples: outcome.crowdSamples, socketsBackAt: outcome.socketsBackAt }), opts.out);
}

const program = new Command('audience-loadtest')
  .description('Rehearse a show: play a seeded crowd against a deployment through its public API, with thresholds as CI expects.')
  .exitOverride()
  .showHelpAfterError();
program
  .command('run')
  .description('play a scenario against a target (the API key comes from AUDIENCE_API_KEY)')
  .argument('<scenario>', 'the scenario file (JSON)')
  .requiredOption('--target <url>', 'the gateway, e.g. https://gw.example or http://127.0.0.1:8080')
  .option('--out <file>', 'write the result (encoded histograms, counts, verdict) as JSON')
  .option('--quiet', 'no progress line')
  .option('--source-addresses <list>', 'spread sockets over these local addresses (127.0.0.2,127.0.0.3 on one machine)')
  .option('--osc-listen <host:port>', 'the venue end: receive what the bridge sends there and report action-to-display latency and loss (String actions are tagged)')
  .option('--display <host:port>', 'as --osc-listen, and check the crowd: each aggregated control\'s value and n that the phones\' last actions give, beside what the display showed (crowd_mismatch)')
  .option('--part <k/n>', 'play part k of n of the crowd (1/n of the arrivals and of the mint rate, a seed of its own): one of n processes or machines')
  .action(async (file: string, opts: RunFlags) => {
    process.exitCode = await run(file, opts);
  });
program
  .command('merge')
  .description('merge the results of several runs (several generator machines) into one report and verdict')
  .argument('<results...>', 'result files written by run --out')
  .option('--out <file>', 'write the merged result')
  .action((files: string[], opts: { out?: string }) => {
    process.exitCode = finish(mergeResults(files), opts.out);
  });

program.parseAsync(process.argv).then(
  () => process.exit(process.exitCode ?? 0),
  (e: unknown) => {
    if (e instanceof CommanderError) process.exit(e.exitCode === 0 ? 0 : EXIT.config);
    if (e instanceof LoadtestError) {
      process.stderr.write(`audience-loadtest: ${e.message}\n`);
      process.exit(EXIT[e.kind]);
    }
    process.stderr.write(`audience-loadtest: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
