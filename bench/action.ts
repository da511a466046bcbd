// Throughput of POST /action against a bare uWS reply, on this machine: the server under test on
// core 0, Redis and the load generator (wrk by default, or autocannon) on core 1.
// With --appendfsync, POST /action runs once per Redis AOF fsync policy listed, in that order
// (`everysec,always,everysec,always` interleaves them), each after CONFIG SET appendfsync.
//   npm run bench:lab -- action [--seconds 10 --connections 100 --tokens 2000 --generator wrk|autocannon --appendfsync everysec,always]
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { GATEWAY_NODE_FLAGS } from '../gateway/node-flags.js';
import { load, pinProcess, pinnedRedis, spawnPinned, stopChild, wrkLoad, type LoadResult, spawnPinnedGateway, type BuiltRequest } from './harness.js';
import { actionRequests, mintTokens, seedDemo } from './audience.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '10' }, connections: { type: 'string', default: '100' }, tokens: { type: 'string', default: '2000' }, generator: { type: 'string', default: 'wrk' }, appendfsync: { type: 'string', default: 'everysec' } } });
const seconds = Number(values.seconds);
const connections = Number(values.connections);
const tokenCount = Number(values.tokens);
if (values.generator !== 'wrk' && values.generator !== 'autocannon') throw new Error('--generator is wrk or autocannon');
const generator = values.generator;
const fsyncPolicies = values.appendfsync.split(',');
if (fsyncPolicies.some((p) => !['always', 'everysec', 'no'].includes(p))) throw new Error('--appendfsync lists always, everysec or no');

/** GATEWAY_PROFILE=DIR writes a V8 CPU profile of the gateway there (see bench/README.md). */
const nodeArgs = process.env.GATEWAY_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.GATEWAY_PROFILE}`] : [];
const BARE = fileURLToPath(new URL('./bare-uws.js', import.meta.url));

function progress(what: string): void {
  process.stderr.write(`bench: ${what}\n`);
}

/** One closed-loop run with the chosen generator, on core 1. */
function run(spec: { name: string; url: string; serverPid: number; requests?: BuiltRequest[] }): Promise<LoadResult> {
  const common = { name: spec.name, url: spec.url, connections, durationSec: seconds, serverPid: spec.serverPid };
  if (generator === 'wrk') return wrkLoad({ ...common, ...(spec.requests && { requests: spec.requests }) });
  let n = 0;
  const list = spec.requests;
  return load({ ...common, ...(list && { request: () => list[n++ % list.length]! }) });
}

/** Script calls Redis has run since it started (EVALSHA and EVAL): the group commit's calls. */
async function scriptCalls(admin: Redis): Promise<number> {
  const stats = String(await admin.info('commandstats'));
  let calls = 0;
  for (const m of stats.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)) calls += Number(m[1]);
  return calls;
}

async function main(): Promise<void> {
  await pinProcess(1); // autocannon runs in this process
  const redis = await pinnedRedis(1);
  const results: LoadResult[] = [];
  try {
    progress(`bare uWS reply, ${seconds} s`);
    const bare = await spawnPinned(0, BARE, ['0'], {}, /listening (\d+)/);
    results.push(await run({ name: 'bare uWS reply (ceiling)', url: `http://127.0.0.1:${bare.match[1]}`, serverPid: bare.child.pid! }));
    await stopChild(bare.child);

    const admin = new Redis(redis.url);
    const key = await seedDemo(redis.url);
    const gw = await spawnPinnedGateway(redis.url, { nodeArgs: [...GATEWAY_NODE_FLAGS, ...nodeArgs] });
    const url = gw.url;

    progress(`minting ${tokenCount} tokens`);
    const tokens = await mintTokens(url, key.apiKey, key.layoutId, tokenCount);
    const fsyncNote = (policy: string) => (fsyncPolicies.length > 1 ? `, appendfsync ${policy}` : '');
    await admin.config('SET', 'appendfsync', fsyncPolicies[0]!);
    await admin.config('RESETSTAT'); // the Lua calls counted below are the run's alone
    progress(`POST /action${fsyncNote(fsyncPolicies[0]!)}, ${seconds} s`);
    const prebuilt = actionRequests(tokens, key.layoutId);
    results.push(await run({ name: `POST /action (${tokenCount} tokens, control mix${fsyncNote(fsyncPolicies[0]!)})`, url, serverPid: gw.child.pid!, requests: prebuilt }));
    // XLEN is capped by MAXLEN trimming; entries-added counts every append ever made.
    const info = (await admin.call('XINFO', 'STREAM', 'ac:layout:{demo-show}:actions')) as (string | number)[];
    const entriesAdded = Number(info[info.indexOf('entries-added') + 1]);
    const luaCalls = await scriptCalls(admin);
    for (const policy of fsyncPolicies.slice(1)) {
      await admin.config('SET', 'appendfsync', policy);
      progress(`POST /action${fsyncNote(policy)}, ${seconds} s`);
      results.push(await run({ name: `POST /action (${tokenCount} tokens, control mix${fsyncNote(policy)})`, url, serverPid: gw.child.pid!, requests: prebuilt }));
    }
    await admin.config('SET', 'appendfsync', 'everysec');
    if (generator === 'wrk') {
      progress(`POST /action with a fresh Idempotency-Key each, ${seconds} s`);
      results.push(await wrkLoad({ name: `POST /action with Idempotency-Key (${tokenCount} tokens, control mix)`, url, connections, durationSec: seconds, serverPid: gw.child.pid!, requests: prebuilt, idempotency: true }));
    }
    await stopChild(gw.child);
    admin.disconnect();

    const ceiling = results[0]!.requestsPerSec;
    process.stdout.write(`\nmachine: ${(await import('node:os')).cpus().length} cores, Node ${process.version}; ${generator}, ${connections} connections, ${seconds} s, no pipelining\n\n`);
    process.stdout.write('| scenario | req/s | × ceiling | p50 ms | p99 ms | max ms | non-2xx | errors | server CPU (share of a core) | server CPU µs/request |\n|---|---|---|---|---|---|---|---|---|---|\n');
    for (const r of results) {
      process.stdout.write(
        `| ${r.name} | ${Math.round(r.requestsPerSec)} | ${(r.requestsPerSec / ceiling).toFixed(2)} | ${r.latencyMs.p50} | ${r.latencyMs.p99} | ${r.latencyMs.max} | ${r.non2xx} | ${r.errors} | ${r.serverCpuShare?.toFixed(2) ?? '-'} | ${r.serverCpuUsPerRequest?.toFixed(1) ?? '-'} |\n`,
      );
    }
    process.stdout.write('\nA server CPU share well under 1.00 means the load generator, not the server, set the rate.\n');
    const okCount = results[1]!.total - results[1]!.non2xx;
    // Requests in flight when the generator stops (at most one per connection) are appended but not counted by it.
    const inFlight = entriesAdded - okCount;
    const verdict = inFlight >= 0 && inFlight <= connections ? `consistent: the ${inFlight} extra were in flight when the generator stopped` : 'MISMATCH';
    process.stdout.write(`\n/action answered 200 ${okCount} times; the stream received ${entriesAdded} entries (${verdict})\n`);
    process.stdout.write(`group commit: ${luaCalls} Lua calls carried them, ${(entriesAdded / luaCalls).toFixed(1)} actions a call\n`);
  } finally {
    await redis.stop();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`bench: ${String(e)}\n`);
  process.exit(1);
});
