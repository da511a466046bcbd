// `npm run bench:lab -- <tool> [options]`: the lab tools, each a question about the gateway's CPU
// that the figures table leaves open (where the socket action spends beyond its floor). None feeds
// the table; each prints its own figures. A probe whose question is answered leaves the tree (git
// keeps it), and a page that cites its figures names it and the date it ran.
//   npm run bench:lab                          lists the tools
//   npm run bench:lab -- profile --live --seconds 8
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** Each tool: its script (compiled beside this file) and the question it answers. */
export const LAB_TOOLS: Record<string, { script: string; what: string }> = {
  profile: { script: 'profile.js', what: "where the gateway's CPU or allocations go under POST /action or live action load (V8 profiler) [--seconds 8 --heap | --promoted --live]" },
  'live-perf': { script: 'live-action-perf.js', what: 'where each server spends its CPU per socket action, kernel and native code included (perf record), against the bare ack or with --storing the storing floor [--seconds 6 --rounds 3 --top 30 --rate 0 --storing]' },
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
