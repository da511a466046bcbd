// The README's error table and configuration table stay in step with the code.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { configProperties } from '../../gateway/config.js';
import { ERRORS, type ErrorCode } from '../../gateway/errors.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

describe('README error table', () => {
  const rows = new Map<string, string>();
  const errors = README.slice(README.indexOf('### Errors'), README.indexOf('\n## ', README.indexOf('### Errors')));
  for (const m of errors.matchAll(/^\| `([a-z_]+)` \| ([^|]+) \|/gm)) rows.set(m[1]!, m[2]!);

  it.each(Object.keys(ERRORS) as ErrorCode[])('documents %s with its status', (code) => {
    expect(rows.has(code), `README has no row for ${code}`).toBe(true);
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

describe('README configuration table', () => {
  it.each(Object.entries(configProperties()))('documents %s', (_key, p) => {
    const row = README.split('\n').find((l) => l.startsWith(`| \`${p['x-env']}\` |`));
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

describe('README references', () => {
  const documents = ['README.md', 'bench/README.md'];
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
    expect(named.length).toBeGreaterThan(doc === 'README.md' ? 20 : 0);
    for (const p of named) {
      const resolved = join(statSync(join(ROOT, p), { throwIfNoEntry: false }) ? ROOT : dir, p);
      expect(resolved.startsWith(ROOT), `${doc}: ${p} leaves the repository`).toBe(true);
      expect(statSync(resolved, { throwIfNoEntry: false }), `${doc}: ${p} does not exist`).toBeDefined();
    }
  });

  it.each(documents)('%s: points at nothing a clone does not have (no numbered spec sections, nothing outside it)', (doc) => {
    const text = readFileSync(join(ROOT, doc), 'utf8');
    expect(text.match(/\bspec(?:'s)? (?:section )?\d+(?:\.\d+)*/gi) ?? []).toEqual([]);
    expect(text.match(/\.\.\/[A-Za-z]/g) ?? []).toEqual([]);
  });
});
