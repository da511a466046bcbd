// What the documentation names exists in the code, read from the code's own tables: every setting
// (an environment variable in backticks) is one the gateway's configuration schema declares or
// the code reads (or a constant the code exports); every command-line flag given to one of the project's programs is one their
// definitions declare (commander options, parseArgs options), a Node flag the programs run with,
// or one of the few flags of other programs the docs name; every 4xxx close code is one the live
// protocol declares, and the close-code table of docs/live.md lists exactly the declared codes.
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { configProperties } from '../../gateway/config.js';
import { GATEWAY_NODE_FLAGS } from '../../gateway/node-flags.js';
import { BRIDGE_NODE_FLAGS } from '../../bridge/node-flags.js';
import { CLOSE } from '../../schemas/live-protocol.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const walk = (dir: string): string[] =>
  readdirSync(dir).flatMap((f) => {
    if (['node_modules', 'dist', 'results'].includes(f)) return [];
    const p = join(dir, f);
    return statSync(p).isDirectory() ? walk(p) : [p];
  });
const CODE = ['gateway', 'bridge', 'demo', 'dev', 'bench', 'loadtest', 'scripts', 'runtime', 'client', 'test/helpers', 'deploy'].flatMap((d) => walk(join(ROOT, d))).filter((p) => /\.(ts|mjs|sh)$/.test(p)).map((p) => readFileSync(p, 'utf8'));
const DOCS = ['README.md', 'bench/README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)].map((d) => ({ doc: d, text: readFileSync(join(ROOT, d), 'utf8') }));

/** Each name in `found` that `known` lacks, with the pages that name it. */
function unknown(found: Iterable<[string, string]>, known: ReadonlySet<string>): string[] {
  const out = new Map<string, Set<string>>();
  for (const [name, doc] of found) if (!known.has(name)) out.set(name, (out.get(name) ?? new Set()).add(doc));
  return [...out].map(([name, docs]) => `${name} (${[...docs].join(', ')})`);
}

describe('settings the docs name', () => {
  it('are declared by the gateway\'s configuration or read by the code', () => {
    const known = new Set<string>(Object.values(configProperties()).map((p) => p['x-env']));
    // a setting read (in a shell script, with a default: ${NAME:-...}), or a table the code exports
    for (const text of CODE) for (const m of text.matchAll(/env(?:\.|\[['"])([A-Z][A-Z0-9_]+)|export const ([A-Z][A-Z0-9_]+)|\$\{([A-Z][A-Z0-9_]+):-/g)) known.add((m[1] ?? m[2] ?? m[3])!);
    // OSCQuery's attribute names (docs/venue.md), written like settings
    for (const name of ['HOST_INFO', 'FULL_PATH', 'OSC_IP', 'OSC_PORT', 'OSC_TRANSPORT', 'PATH_CHANGED', 'WS_PORT']) known.add(name);
    const named = DOCS.flatMap(({ doc, text }) => [...text.matchAll(/`([A-Z][A-Z0-9]*_[A-Z0-9_]+)(?:=[^`]*)?`/g)].map((m): [string, string] => [m[1]!, doc]));
    expect(named.length).toBeGreaterThan(50);
    expect(unknown(named, known)).toEqual([]);
  });
});

describe('command-line flags the docs name', () => {
  it("are declared by the project's programs, or are Node's or another named program's", () => {
    const known = new Set<string>();
    for (const text of CODE) {
      for (const m of text.matchAll(/\.(?:option|requiredOption)\(\s*'(?:-\w, )?(--[a-z0-9-]+)/g)) known.add(m[1]!);
      if (text.includes('parseArgs')) for (const m of text.matchAll(/(?<=[{,]\s*)'?([a-z][a-z0-9-]*)'?: \{ type: '(?:string|boolean)'/g)) known.add(`--${m[1]}`);
    }
    // Node's and V8's, each as this Node lists it
    const nodeHelp = execFileSync(process.execPath, ['--help'], { encoding: 'utf8' }) + execFileSync(process.execPath, ['--v8-options'], { encoding: 'utf8' });
    for (const f of [...GATEWAY_NODE_FLAGS, ...BRIDGE_NODE_FLAGS, '--trace-gc-nvp', '--trace-gc', '--cpu-prof', '--perf-basic-prof']) {
      const name = f.split('=')[0]!;
      expect(nodeHelp, `${name} is not a flag of Node ${process.version}`).toMatch(new RegExp(`(^|\\s)--${name.slice(2).replaceAll('-', '[-_]')}(\\s|=|$)`, 'm'));
      known.add(name);
    }
    for (const f of ['--read-only', '--ulimit', '--runtime']) known.add(f); // podman's (docs/deploy.md)
    for (const f of ['--ready', '--status']) known.add(f); // systemd-notify's (docs/venue.md)
    known.add('--contents'); // dpkg's (docs/venue.md)
    const named = DOCS.flatMap(({ doc, text }) => {
      const ours = [...text.matchAll(/(?:audiencectl|audience-bridge|audience-loadtest|audience-osc-monitor|node dist\/[\w/.-]+|npm run [\w:-]+ --)[^`\n]*/g)].flatMap((m) => [...m[0].matchAll(/(?<![\w-])(--[a-z][a-z0-9-]*)/g)].map((f) => f[1]!));
      const alone = [...text.matchAll(/`(--[a-z][a-z0-9-]*)[^`]*`/g)].map((m) => m[1]!);
      return [...ours, ...alone].map((f): [string, string] => [f, doc]);
    });
    expect(named.length).toBeGreaterThan(30);
    expect(unknown(named, known)).toEqual([]);
  });
});

describe('close codes the docs name', () => {
  const declared = new Set<number>(Object.values(CLOSE));

  it('are the live protocol\'s own (every 4xxx code)', () => {
    // a 4xxx number said as a close: "closes with 4009", "4001 or 4003", a table row or a code span of its own
    const said = /(?:clos\w*|codes?)\W+(?:with\s+)?(4\d{3})\b|\b(4\d{3}),? (?:or|and) 4\d{3}\b|^\| (4\d{3}) \||`(4\d{3})`/gim;
    const named = DOCS.flatMap(({ doc, text }) => [...text.matchAll(said)].map((m): [string, string] => [(m[1] ?? m[2] ?? m[3] ?? m[4])!, doc]));
    expect(named.length).toBeGreaterThan(10);
    expect(unknown(named, new Set([...declared].map(String)))).toEqual([]);
  });

  it("are listed in docs/live.md's close-code table, each declared code once", () => {
    const live = DOCS.find((d) => d.doc === 'docs/live.md')!.text;
    const table = live.slice(live.indexOf('## Close codes'), live.indexOf('\n## ', live.indexOf('## Close codes') + 1));
    const rows = [...table.matchAll(/^\| (\d{4}) \| `(\w+)` \|/gm)].map((m) => [Number(m[1]), m[2]] as const);
    expect(rows.sort((a, b) => a[0] - b[0])).toEqual(Object.entries(CLOSE).map(([name, code]) => [code, name] as const).sort((a, b) => a[0] - b[0]));
  });
});
