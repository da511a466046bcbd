// The documentation stays in step with the code: the error table (docs/api.md) and the
// configuration table (docs/configuration.md) name every code and setting, the README's Quick start
// holds exactly its two commands, and every link and path in the README, bench/README.md and every
// page under docs/ resolves.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { configProperties } from '../../gateway/config.js';
import { ERRORS, type ErrorCode } from '../../gateway/errors.js';
import { TABLE_END, TABLE_START } from '../../bench/figures-table.js';
import { SIZING_END, SIZING_START } from '../../bench/sizing.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const API = readFileSync(join(ROOT, 'docs/api.md'), 'utf8');
const CONFIGURATION = readFileSync(join(ROOT, 'docs/configuration.md'), 'utf8');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

describe('docs/api.md error table', () => {
  const rows = new Map<string, string>();
  const from = API.indexOf('### Errors');
  const next = API.indexOf('\n## ', from);
  const errors = API.slice(from, next < 0 ? undefined : next);
  for (const m of errors.matchAll(/^\| `([a-z_]+)` \| ([^|]+) \|/gm)) rows.set(m[1]!, m[2]!);

  it.each(Object.keys(ERRORS) as ErrorCode[])('documents %s with its status', (code) => {
    expect(rows.has(code), `docs/api.md has no row for ${code}`).toBe(true);
    expect(rows.get(code)).toContain(String(ERRORS[code].status));
  });

  it('documents no code that does not exist', () => {
    for (const code of rows.keys()) expect(Object.keys(ERRORS)).toContain(code);
  });

  it('every code is used by the code', () => {
    const code = sources(join(ROOT, 'gateway'))
      .filter((p) => !p.endsWith('errors.ts'))
      .map((p) => readFileSync(p, 'utf8'))
      .join('\n');
    for (const c of Object.keys(ERRORS)) {
      if (c === 'internal') continue; // made by the HTTP layer's internalError() for anything unexpected
      expect(code.includes(`'${c}'`), `${c} is never raised`).toBe(true);
    }
  });
});

describe('docs/configuration.md table', () => {
  it.each(Object.entries(configProperties()))('documents %s', (_key, p) => {
    const row = CONFIGURATION.split('\n').find((l) => l.startsWith(`| \`${p['x-env']}\` |`));
    expect(row, `no row for ${p['x-env']}`).toBeDefined();
    expect(row).toContain(String(p.default));
  });
});

describe('README quick start', () => {
  it('holds exactly the two commands', () => {
    const section = README.slice(README.indexOf('## Quick start'), README.indexOf('\n## ', README.indexOf('## Quick start') + 5));
    const commands = [...section.matchAll(/```\n([^`]+)```/g)].map((m) => m[1]!.trim());
    expect(commands).toEqual(['npm install && npm start', 'npm install && npm test']);
  });
});

describe('documentation references', () => {
  const documents = ['README.md', 'bench/README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

  it('covers every page under docs/', () => {
    expect(documents.filter((d) => d.startsWith('docs/')).length).toBeGreaterThanOrEqual(8);
  });
  /** Made by a run, not committed: referred to as where to look after running something. */
  const GENERATED = ['test-artifacts/', 'bench/results/', 'var/', 'dist/'];
  const anchor = (heading: string) =>
    heading
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-');

  it.each(documents)('%s: every link resolves inside the repository', (doc) => {
    const text = readFileSync(join(ROOT, doc), 'utf8');
    const links = [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
    for (const link of links) {
      if (/^https?:\/\//.test(link)) continue;
      const [file = '', hash] = link.split('#');
      const target = file ? join(ROOT, doc, '..', file) : join(ROOT, doc);
      expect(target.startsWith(ROOT), `${doc}: ${link} leaves the repository`).toBe(true);
      expect(() => statSync(target), `${doc}: ${link} does not exist`).not.toThrow();
      if (hash) {
        const headings = [...readFileSync(target, 'utf8').matchAll(/^#+ (.+)$/gm)].map((m) => anchor(m[1]!));
        expect(headings, `${doc}: ${link} names no heading`).toContain(hash);
      }
    }
  });

  it.each(documents)('%s: every file or folder it names in backticks exists', (doc) => {
    const text = readFileSync(join(ROOT, doc), 'utf8');
    const dir = join(ROOT, doc, '..');
    const named = [...text.matchAll(/`([A-Za-z0-9_.-]+\/[A-Za-z0-9_./-]*)`/g)]
      .map((m) => m[1]!)
      .filter((p) => !p.startsWith('/') && !p.includes('://') && /^(\.\.\/|\.\/)?[a-z]/.test(p) && (p.endsWith('/') || /\.[a-z]+$/.test(p)))
      .filter((p) => !GENERATED.some((g) => p.startsWith(g)));
    if (doc === 'docs/development.md') expect(named.length).toBeGreaterThan(5); // the code layout names its folders
    for (const p of named) {
      const resolved = join(statSync(join(ROOT, p), { throwIfNoEntry: false }) ? ROOT : dir, p);
      expect(resolved.startsWith(ROOT), `${doc}: ${p} leaves the repository`).toBe(true);
      expect(statSync(resolved, { throwIfNoEntry: false }), `${doc}: ${p} does not exist`).toBeDefined();
    }
  });

  it.each(documents)('%s: points at nothing a clone does not have (no numbered spec sections, nothing outside it)', (doc) => {
    const text = readFileSync(join(ROOT, doc), 'utf8');
    expect(text.match(/\bspec(?:'s)? (?:section )?\d+(?:\.\d+)*/gi) ?? []).toEqual([]);
    // a relative path may climb out of its folder, never out of the repository (the two checks above resolve each)
    const depth = doc.split('/').length - 1;
    expect(text.match(new RegExp(`(\\.\\./){${depth + 1},}[A-Za-z]`, 'g')) ?? []).toEqual([]);
  });
});

describe('documentation for its reader', () => {
  const pages = ['README.md', 'bench/README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

  it('keeps the README a front door (at most about 200 lines)', () => {
    expect(README.split('\n').length).toBeLessThanOrEqual(220);
  });

  it.each(pages)('%s: no issue numbers, commit hashes or first-person notes', (doc) => {
    // the generated tables (figures, sizing) name the commit they measured, as they must; nothing else may
    let text = readFileSync(join(ROOT, doc), 'utf8');
    for (const [open, close] of [[TABLE_START, TABLE_END], [SIZING_START, SIZING_END]] as const) {
      const start = text.indexOf(open);
      if (start >= 0) text = text.slice(0, start) + text.slice(text.indexOf(close));
    }
    expect(text.match(/\b[Ii]ssues? #?\d+\b/g) ?? []).toEqual([]);
    expect(text.match(/\bI (did|tried|ran|measured|found|chose|used|looked)\b/g) ?? []).toEqual([]);
    // a commit hash: 7 to 40 hex digits with at least one digit and one letter, standing alone
    const hashes = [...text.matchAll(/(?<![\w./-])([0-9a-f]{7,40})(?![\w./-])/g)].map((m) => m[1]!).filter((h) => /\d/.test(h) && /[a-f]/.test(h));
    expect(hashes).toEqual([]);
  });
});
