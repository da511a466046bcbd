// `npm run bench:lab -- <tool> [options]`: the lab tools, each a question about one part that the
// figures table does not ask. None feeds the table; each prints its own figures, and a page that
// cites one names the tool, its options and the date it ran.
//   npm run bench:lab                          lists the tools
//   npm run bench:lab -- token-cache --tokens 100000
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** Each tool: its script (compiled beside this file) and the question it answers. */
export const LAB_TOOLS: Record<string, { script: string; what: string }> = {
  action: { script: 'action.js', what: 'POST /action against the bare uWS reply, with its options: fresh Idempotency-Keys, each Redis fsync policy [--seconds 10 --connections 100 --tokens 2000 --generator wrk|autocannon --appendfsync everysec,always]' },
  profile: { script: 'profile.js', what: "where the gateway's CPU or allocations go under POST /action or live action load (V8 profiler) [--seconds 8 --heap | --promoted --live]" },
  'live-perf': { script: 'live-action-perf.js', what: 'where each server spends its CPU per socket action, kernel and native code included (perf record) [--seconds 6 --rounds 3 --top 30]' },
  'token-cache': { script: 'token-cache.js', what: 'what the verified-token cache costs in memory and saves in CPU [--tokens 100000]' },
  'crowd-moves': { script: 'crowd-moves.js', what: 'what counting every participant once costs Redis when participants move between processes [--participants 50000 --seconds 60 --every 20]' },
  'crowd-memory': { script: 'crowd-memory.js', what: "what the crowd's fold and rate budgets take in a gateway's memory [--participants 200000]" },
  node: { script: 'node-versions.js', what: 'the bare uWS reply and POST /action on Node 20 and Node 22, side by side [--seconds 10]' },
  moderation: { script: 'moderation.js', what: 'CPU per String checked by each moderation policy, and Redis memory per show record entry [--texts 20000 --entries 20000]' },
};

function main(): void {
  const [name, ...args] = process.argv.slice(2);
  const tool = name === undefined ? undefined : LAB_TOOLS[name];
  if (!tool) {
    const list = Object.entries(LAB_TOOLS).map(([n, t]) => `  ${n.padEnd(13)} ${t.what}`).join('\n');
    process.stderr.write(`${name === undefined ? '' : `bench:lab: no tool "${name}"\n`}usage: npm run bench:lab -- <tool> [options]\n${list}\n`);
    process.exit(name === undefined ? 0 : 2);
  }
  const child = spawn(process.execPath, [fileURLToPath(new URL(tool.script, import.meta.url)), ...args], { stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}

main();
