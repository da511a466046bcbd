// The show record as a file: JSON (the entries as recorded, each with its ISO time) or CSV, one row
// an entry, the columns docs/crowd.md describes. Text a participant wrote is quoted as RFC 4180
// says, and every text cell that a spreadsheet would take for a formula (= + - @, tab, carriage
// return), whatever its column, is prefixed with an apostrophe (OWASP's advice on CSV injection).
// A number (the entries are read against their schema) is written as it is: its text is no formula.
import type { TimedEntry } from './show-record.js';

export const CSV_COLUMNS = ['at', 'kind', 'by', 'lid', 'value', 'n', 'crowd', 'from', 'to', 'decision', 'item', 'sub', 'text'] as const;

const iso = (ms: number) => new Date(ms).toISOString();

/** One cell: a text with a formula-like start made text; quoted when it holds a comma, a quote or a line break. */
function cell(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number') return String(value);
  let s = value;
  if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[\x22,\r\n]/.test(s) ? `"${s.replace(/\x22/g, '""')}"` : s; // \x22: the double quote
}

const numbers = (xs: readonly number[]) => xs.join(' ');

function row(e: TimedEntry): Record<(typeof CSV_COLUMNS)[number], string | number | null> {
  const base = { at: iso(e.at), kind: e.kind, by: null, lid: null, value: null, n: null, crowd: null, from: null, to: null, decision: null, item: null, sub: null, text: null };
  switch (e.kind) {
    case 'page':
      return { ...base, by: e.by, from: e.from, to: e.to, crowd: JSON.stringify(e.values.map((v) => ({ lid: v.lid, value: v.value, n: v.n }))) };
    case 'cue':
      return { ...base, by: e.by, lid: e.lid, value: e.value, n: e.n, crowd: numbers(e.crowd) };
    case 'moderation':
      return { ...base, by: e.by, lid: e.lid, decision: e.decision, item: e.item, sub: e.sub, text: e.text };
    case 'crowd':
      return { ...base, lid: e.lid, value: numbers(e.value), n: e.n };
  }
}

export function recordCsv(entries: readonly TimedEntry[]): string {
  const lines = [CSV_COLUMNS.join(',')];
  for (const e of entries) {
    const r = row(e);
    lines.push(CSV_COLUMNS.map((c) => cell(r[c])).join(','));
  }
  return `${lines.join('\r\n')}\r\n`;
}

/** `unreadable`: entries of the span that were not an entry's JSON, left out. */
export function recordJson(layoutId: string, from: number | null, to: number | null, entries: readonly TimedEntry[], unreadable: number): string {
  return JSON.stringify({ layoutId, from: from === null ? null : iso(from), to: to === null ? null : iso(to), unreadable, entries: entries.map((e) => ({ ...e, at: iso(e.at) })) });
}

/** A time argument: ISO 8601 or ms since the epoch; null when absent; NaN when unreadable. */
export function parseTime(text: string | undefined | null): number | null {
  if (text === undefined || text === null || text === '') return null;
  return /^\d+$/.test(text) ? Number(text) : Date.parse(text);
}
