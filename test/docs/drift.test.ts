// The docs cannot drift from what owns each fact: a default stated beside a setting's name in
// README.md, docs/, the client's README or deploy/ is the config schema's, and a figure in a
// sentence that cites bench/README.md is in that page (or names its command and date). Each check
// is shown to fail on a planted mistake.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configProperties } from '../../gateway/config.js';
import { citationDrifts, defaultDrifts } from '../helpers/doc-drift.js';

const walk = (dir: string): string[] => readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]));
const PAGES = [
  'README.md', 'bench/README.md', 'client/README.md',
  ...readdirSync('docs').filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`),
  ...walk('deploy').filter((f) => /\.(conf|cfg|ya?ml|json|md|sh)$|Containerfile$/.test(f)),
];
const DEFAULTS = new Map(Object.values(configProperties()).map((p) => [p['x-env'], p.default]));
const BENCH = readFileSync('bench/README.md', 'utf8');
const drifts = (file: string, text: string) => [...defaultDrifts(file, text, DEFAULTS), ...citationDrifts(file, text, BENCH)];

describe('the docs against what owns each fact', () => {
  it('state every setting default as the config schema has it, and every figure that cites bench/README.md as that page has it', () => {
    expect(PAGES.length).toBeGreaterThan(20);
    const found = PAGES.flatMap((f) => drifts(f, readFileSync(f, 'utf8')));
    expect(found.map((d) => `${d.file}: ${d.why} (${d.text})`)).toEqual([]);
  });

  it('read defaults in each way the pages state them, in the setting\'s own unit', () => {
    const planted = [
      'the gateway refuses bodies over `MAX_BODY_BYTES` (64 KiB; the import takes 1 MiB)',
      '# the gateway refuses bodies over MAX_BODY_BYTES (64 KiB by default; the team page',
      '`LIVE_DRAIN_MS` is 20 s by default',
      '`CACHE_RECHECK_MS` defaults to 2 s',
      'a socket is closed after `LIVE_IDLE_TIMEOUT_SECONDS` (2 minutes)',
      '`TOKEN_RENEW_GRACE_SECONDS` (default 6 days)',
    ];
    for (const text of planted) expect(defaultDrifts('planted.md', text, DEFAULTS), text).toHaveLength(1);
    const right = [
      '`MAX_BODY_BYTES` (16 KiB)', '`LIVE_DRAIN_MS` (10 s)', '`LIVE_IDLE_TIMEOUT_SECONDS` (60, checked in steps of 4 s)', '`TOKEN_RENEW_GRACE_SECONDS` (7 days)',
      '`CACHE_RECHECK_MS` (5 s by default)', '`LIVE_DRAIN_MS` (20 s here)', '`LIVE_MAX_SOCKETS` (15,000)',
    ];
    for (const text of right) expect(defaultDrifts('right.md', text, DEFAULTS), text).toEqual([]);
  });

  it('find a figure that cites bench/README.md but is not in it, and let one with its command and date be', () => {
    const held = /\| gateway resident memory[^|]*\| (\d+) MiB/.exec(BENCH)![1]!;
    expect(citationDrifts('p.md', `The gateway holds ${held} MiB with 100,000 tokens cached ([figures](../bench/README.md)).`, BENCH)).toEqual([]);
    expect(citationDrifts('p.md', `The gateway holds ${Number(held) + 7} MiB with 100,000 tokens cached ([figures](../bench/README.md)).`, BENCH)).toHaveLength(1);
    expect(citationDrifts('p.md', 'Calls grow instead of multiplying (5.9 µs less CPU per request, see `bench/README.md`).', BENCH)).toHaveLength(1);
    expect(citationDrifts('p.md', 'It held 133 MiB (`npm run bench`, 2026-11-21; the current figure is in [the table](../bench/README.md)).', BENCH)).toEqual([]);
  });

  it("name in the README every target the figures table's run did not meet, and no other", () => {
    const rows = BENCH.split('\n').filter((l) => /^\| .* \| (yes|\*\*no\*\*) \|$/.test(l));
    expect(rows.length).toBeGreaterThan(5);
    // a row's target by its first cell: 'live channel: CPU per socket action, gateway / bare ... (bench -- live)' -> 'CPU per socket action'
    const what = (row: string) => row.split(' | ')[0]!.replace(/^\| /, '').replace(/ \(bench:[^)]*\)/, '').split(', ')[0]!.replace(/^[^:]*: /, '');
    const unmet = rows.filter((r) => r.endsWith('| **no** |')).map(what);
    const README = readFileSync('README.md', 'utf8').replace(/\s+/g, ' ');
    const named = /a target not met there is named here: ([^.]*)\./.exec(README)?.[1] ?? '';
    for (const w of unmet) expect(named, `the README does not say that "${w}" is not met`).toContain(w);
    for (const w of rows.filter((r) => r.endsWith('| yes |')).map(what)) if (w.length > 12) expect(named, `the README says "${w}" is not met, the table says it is`).not.toContain(w);
  });

  it("list in docs/operations.md every series an alert names (the Node.js defaults aside)", () => {
    const ops = readFileSync('docs/operations.md', 'utf8');
    const alerts = readFileSync('deploy/prometheus/alerts.yml', 'utf8');
    const series = new Set([...alerts.matchAll(/\baudience_(gateway|bridge)_([a-z_]+)/g)].map((m) => m[2]!.replace(/_(bucket|count|sum)$/, '')).filter((n) => !n.startsWith('nodejs_')));
    expect(series.size).toBeGreaterThan(10);
    for (const name of series) expect(ops, `docs/operations.md lists no ${name}`).toMatch(new RegExp(`\x60${name}(\\{|\x60)`));
  });
});
