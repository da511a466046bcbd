// What moderation and the show record cost, measured side by side in one run:
// 1. CPU per String checked by a control's policy (gateway/moderation/text-policy.ts), against
//    the String's own JSON.parse as the yardstick: open (only the length), filter with English,
//    filter with five languages, a blocklist and every block. 20,000 texts a round (a seeded mix
//    of scripts, leetspeak, numbers, links), 5 rounds interleaved; the median round is reported.
//    Then the five-language policy on texts of 1,024 characters (the longest a String may be):
//    LONG_TEXTS of them a round, so the cost of the longest text has a figure of its own.
// 2. Redis memory per show record entry (MEMORY USAGE of the stream and its state after N
//    moderation entries of about 200 bytes of JSON, appended by schemas/show-record.lua) against
//    the JSON they hold.
//   npm run bench:lab -- moderation [--texts 20000 --entries 20000]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { startRedisServer } from '../dev/redis-server.js';
import { TextPolicy } from '../gateway/moderation/text-policy.js';
import { withIncludes } from '../schemas/show-record.js';
import type { Moderation } from '../schemas/types.js';
import { seededRandom } from '../loadtest/crowd-model.js';

const { values } = parseArgs({ options: { texts: { type: 'string', default: '20000' }, entries: { type: 'string', default: '20000' } } });
const TEXTS = Number(values.texts);
const ENTRIES = Number(values.entries);
const ROUNDS = 5;
/** texts of 1,024 characters a round */
const LONG_TEXTS = 500;

const WORDS = ['hello', 'from', 'row', '12', 'happy', 'birthday', 'Sam', 'go', 'team', 'привет', 'こんにちは', 'gr33tings', 'ENCORE', 'see', 'you', 'at', 'example.com', '🎉', 'wow', 'the', 'band', 'is', 'amazing', 'Grüße', '455'];

function texts(seed: number): string[] {
  const rand = seededRandom(seed);
  return Array.from({ length: TEXTS }, () => Array.from({ length: 2 + Math.floor(rand() * 10) }, () => WORDS[Math.floor(rand() * WORDS.length)]).join(' '));
}

/** Texts of exactly 1,024 code points of the same words. */
function longTexts(seed: number): string[] {
  const rand = seededRandom(seed);
  return Array.from({ length: LONG_TEXTS }, () => {
    let t = '';
    while ([...t].length < 1024) t += `${WORDS[Math.floor(rand() * WORDS.length)]} `;
    return [...t].slice(0, 1024).join('');
  });
}

const POLICIES: [string, Moderation][] = [
  ['open, maxLength only', { mode: 'open', maxLength: 140 }],
  ['filter: English', { mode: 'filter', maxLength: 140 }],
  ['filter: en de fr es it + blocklist + urls, emails, phones', { mode: 'filter', maxLength: 140, languages: ['en', 'de', 'fr', 'es', 'it'], blocklist: ['rival fc', 'banana'], block: ['urls', 'emails', 'phones'] }],
];

function policyCosts(): string[] {
  const sample = texts(1);
  const bodies = sample.map((t) => JSON.stringify({ layoutId: 'show', lid: 5, type: 'String', value: t }));
  const compiled = POLICIES.map(([name, m]) => {
    const p = new TextPolicy(m);
    const t0 = performance.now();
    p.refusal('warm up the matchers');
    return { name, p, compileMs: performance.now() - t0, rounds: [] as number[] };
  });
  const parse: number[] = [];
  const long = longTexts(2);
  // the same policy as the widest, its length bound at the longest a String may be
  const widest = { name: POLICIES[POLICIES.length - 1]![0], p: new TextPolicy({ ...POLICIES[POLICIES.length - 1]![1], maxLength: 1024 }) };
  widest.p.refusal('warm up the matchers');
  const longRounds: number[] = [];
  let sink = 0;
  for (let r = 0; r < ROUNDS; r++) {
    let t0 = performance.now();
    for (const b of bodies) sink += (JSON.parse(b) as { value: string }).value.length;
    parse.push(((performance.now() - t0) * 1000) / TEXTS);
    for (const c of compiled) {
      t0 = performance.now();
      for (const t of sample) if (c.p.refusal(t) !== null) sink++;
      c.rounds.push(((performance.now() - t0) * 1000) / TEXTS);
    }
    t0 = performance.now();
    for (const t of long) if (widest.p.refusal(t) !== null) sink++;
    longRounds.push(((performance.now() - t0) * 1000) / LONG_TEXTS);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const base = median(parse);
  return [
    `| policy | µs per text | × the body's JSON.parse | first use (compile) |`,
    `|---|---|---|---|`,
    `| JSON.parse of the action body (yardstick) | ${base.toFixed(2)} | 1.00× | – |`,
    ...compiled.map((c) => `| ${c.name} | ${median(c.rounds).toFixed(2)} | ${(median(c.rounds) / base).toFixed(1)}× | ${c.compileMs.toFixed(0)} ms |`),
    `| ${widest.name.replace('filter:', 'filter (maxLength 1024):')}, texts of 1,024 characters | ${median(longRounds).toFixed(2)} | ${(median(longRounds) / base).toFixed(1)}× | – |`,
    ``,
    `(${TEXTS} texts a round, ${LONG_TEXTS} of 1,024 characters, ${ROUNDS} rounds, median; ${sink > 0 ? 'results used' : ''})`,
  ];
}

async function recordMemory(): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'ac-bench-record-'));
  const server = await startRedisServer({ dir });
  const redis = new Redis(server.url);
  try {
    const script = `--!include show-record.lua\nshow_record_append(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], true)\nreturn 1`;
    const lua = withIncludes(script);
    let json = 0;
    for (let i = 0; i < ENTRIES; i++) {
      const entry = JSON.stringify({ kind: 'moderation', decision: i % 3 === 0 ? 'approve' : 'reject', item: i.toString(16).padStart(16, '0'), by: 'admin:producer@team.example', sub: `aud_${i.toString(36).padStart(16, '0')}`, lid: 5, text: `Happy birthday Sam, from row ${i % 40}!` });
      json += Buffer.byteLength(entry);
      await redis.eval(lua, 2, 'layout:{b}:record', 'layout:{b}:record-state', entry, 7 * 24 * 3600 * 1000, 1024 * 1024 * 1024);
    }
    const memory = Number(await redis.call('MEMORY', 'USAGE', 'layout:{b}:record', 'SAMPLES', '0')) + Number(await redis.call('MEMORY', 'USAGE', 'layout:{b}:record-state'));
    return [
      `| show record | bytes per entry |`,
      `|---|---|`,
      `| JSON held (what SHOW_RECORD_MAX_BYTES counts) | ${(json / ENTRIES).toFixed(0)} |`,
      `| Redis memory (MEMORY USAGE of the stream and its state) | ${(memory / ENTRIES).toFixed(0)} |`,
      ``,
      `(${ENTRIES} moderation entries)`,
    ];
  } finally {
    redis.disconnect();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const lines = [`# bench:lab -- moderation, ${new Date().toISOString()}, Node ${process.version}`, '', ...policyCosts(), '', ...(await recordMemory())];
console.log(lines.join('\n'));
