// What the docs say of the gateway's settings and of the benchmarks, held against the sources that
// own those facts: a default stated beside a setting's name against the config schema's, and a
// figure in a sentence that cites bench/README.md against that page. Pure functions of text, so a
// test can run them on the real pages and on planted mistakes.

/** A finding: where, and what disagrees. */
export interface Drift {
  file: string;
  text: string;
  why: string;
}

const UNIT_MS: Record<string, number> = {
  ms: 1, s: 1000, second: 1000, seconds: 1000, min: 60_000, minute: 60_000, minutes: 60_000, h: 3_600_000, hour: 3_600_000, hours: 3_600_000, day: 86_400_000, days: 86_400_000,
};
const UNIT_BYTES: Record<string, number> = { B: 1, bytes: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3 };

/** A stated quantity in the unit the setting's name says (_MS, _SECONDS, _BYTES), or null when it cannot be read as one. */
export function quantity(setting: string, number: string, unit: string | undefined): number | null {
  const n = Number(number.replace(/,/g, ''));
  if (!Number.isFinite(n)) return null;
  if (unit === undefined || unit === '') return n;
  if (unit in UNIT_MS) {
    if (setting.endsWith('_MS')) return n * UNIT_MS[unit]!;
    if (setting.endsWith('_SECONDS')) return (n * UNIT_MS[unit]!) / 1000;
    return null;
  }
  if (unit in UNIT_BYTES) return setting.endsWith('_BYTES') ? n * UNIT_BYTES[unit]! : null;
  return null;
}

const NUMBER = String.raw`(\d[\d,]*(?:\.\d+)?)`;
const UNIT = String.raw`(?:\s?(ms|seconds?|s|minutes?|min|hours?|h|days?|KiB|MiB|GiB|bytes|B)\b)?`;

/**
 * Defaults stated beside a setting's name that differ from the schema's: `` `NAME` (60 s) ``,
 * `` `NAME` (default 16 KiB) ``, `` `NAME` is 64 KiB by default `` and `` `NAME` defaults to 5 ``.
 * A parenthesis that gives a deployment's own value says so (`here`, `in the example`) and is passed over.
 */
export function defaultDrifts(file: string, text: string, defaults: ReadonlyMap<string, unknown>): Drift[] {
  const found: Drift[] = [];
  const flat = text.replace(/\s*\n\s*(#\s*)?/g, ' ');
  const patterns = [
    new RegExp(String.raw`\x60([A-Z][A-Z0-9_]+)\x60 \((?:default |by default )?${NUMBER}${UNIT}([^)]*)\)`, 'g'),
    new RegExp(String.raw`\x60?([A-Z][A-Z0-9_]+)\x60? (?:is|of) ${NUMBER}${UNIT}() by default`, 'g'),
    new RegExp(String.raw`\x60?([A-Z][A-Z0-9_]+)\x60?[^.;()]{0,40}? defaults? (?:to |is )?${NUMBER}${UNIT}()`, 'g'),
    new RegExp(String.raw`\x60?([A-Z][A-Z0-9_]+)\x60? \(${NUMBER}${UNIT} by default[);,]()`, 'g'),
  ];
  for (const pattern of patterns) {
    for (const m of flat.matchAll(pattern)) {
      const [whole, name = '', number = '', unit, rest = ''] = m;
      if (!defaults.has(name) || /\bhere\b|example|for instance|say\b/.test(rest)) continue;
      const stated = quantity(name, number, unit);
      const expected = Number(defaults.get(name));
      if (stated === null) found.push({ file, text: whole, why: `cannot read "${number}${unit ? ` ${unit}` : ''}" as ${name}'s unit` });
      else if (stated !== expected) found.push({ file, text: whole, why: `${name}'s default is ${expected}, not ${stated}` });
    }
  }
  return found;
}

/** A figure of a sentence: a number with a unit of measure (ms, µs, %, ×, MiB, KB, B, a second...). */
const FIGURE = /(?<![\w.])(\d[\d,]*(?:\.\d+)?)\s?(µs|us|ms|%|×|x\b|MiB|KiB|KB|MB|GB|B\b|bytes)/g;

/** The sentences of a page (a period, a colon or a semicolon that ends a clause, a blank line, or a table's row). */
function sentences(text: string): string[] {
  return text
    .replace(/```[\s\S]*?```/g, '')
    .split(/\n\s*\n|\n(?=\|)|(?<=[.;:])\s+(?=[A-Z(`*-])/)
    .map((s) => s.replace(/\s+/g, ' '));
}

/**
 * Figures in sentences that cite bench/README.md (by link or by name) that bench/README.md does
 * not hold: a figure that cites the table must be in it, unless its sentence names the command
 * and the date it was measured with.
 */
export function citationDrifts(file: string, text: string, benchReadme: string): Drift[] {
  const held = new Set([...benchReadme.matchAll(/\d[\d,]*(?:\.\d+)?/g)].map((m) => m[0].replace(/,/g, '')));
  const found: Drift[] = [];
  for (const sentence of sentences(text)) {
    if (!/bench\/README\.md/.test(sentence)) continue;
    // a figure that names its command and date cites the table for the current figure only
    if (/`(?:npm run|npx|node) [^`]*`/.test(sentence) && /\b20\d\d-\d\d-\d\d\b/.test(sentence)) continue;
    for (const [whole, number = ''] of sentence.matchAll(FIGURE)) {
      if (!held.has(number.replace(/,/g, ''))) found.push({ file, text: `${whole} in "${sentence.slice(0, 160)}"`, why: `bench/README.md holds no ${number}` });
    }
  }
  return found;
}
