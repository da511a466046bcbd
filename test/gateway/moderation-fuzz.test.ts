// Seeded fuzz of a `filter` String control through the real gateway and bridge to liblo's oscdump:
// 10,000 texts of mixed scripts, emoji and ZWJ sequences, combining marks, C0 and C1 controls, bidi
// overrides, zero-width characters, fullwidth forms, lone surrogates and long runs, a third of them
// carrying a listed word in disguise (case, width, leetspeak, repeated letters, separators,
// invisible characters inside, small capitals, upside-down text, a combining overlay on each letter,
// a hyphen or a dot inside the word) or a link, email address or phone number in disguise (a
// top-level domain no list knows, "[.]" and " dot ", " at ", other scripts' digits, keypad letters). Every answer is 200 or a 400 with a stable code, never a 5xx; every
// disguised word is refused; every accepted text reaches the display once, without a control, bidi
// or zero-width character and without a listed word. Redis stops for a second partway, as a
// loaded machine can hold it up: answers wait for it, and none is a 503. Rerun a failure with
// FUZZ_SEED=<seed>.
import type { Bridge } from '../../bridge/app.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LayoutDefinition } from '../../schemas/types.js';
import { startTestBridge } from '../helpers/bridge.js';
import { eventually, mintToken, postAction, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { LOADED_MACHINE_MS } from '../helpers/loaded-machine.js';
import { startOscdump, type Oscdump } from '../helpers/oscdump.js';
import { stallRedis, useRedis } from '../helpers/redis.js';
import { fuzzSeed, seededRandom } from '../helpers/seeded-random.js';

const TEXTS = 10_000;
/** Redis stops for a second when this text goes out: answers wait, none turns into a 503 */
const STALL_AT = 3_000;
const STALL_MS = 1_000;
const seed = fuzzSeed();
const LISTED = ['banana', 'wanker', 'bastard', 'arschloch', 'rivalfc'];
const LAYOUT: LayoutDefinition = {
  layoutId: 'fuzz-wall',
  name: 'Fuzz wall',
  activePageId: 'p',
  pages: [{ pageId: 'p', name: 'P', controls: [{ lid: 2, address: '/002', type: 'String', props: { label: 'Wall' }, moderation: { mode: 'filter', blocklist: ['banana', 'rivalfc'], block: ['urls', 'emails', 'phones'], languages: ['en', 'de'] } }] }],
};

const redis = useRedis();
let t: TestGateway;
let bridge: Bridge;
let dump: Oscdump;
beforeAll(async () => {
  // a Redis call waits as long as a loaded machine may hold Redis up: what is answered depends on the text alone
  t = await startTestGateway({ redisUrl: redis.get().server.url, layout: LAYOUT, overrides: { redisCommandTimeoutMs: LOADED_MACHINE_MS } });
  dump = await startOscdump();
  ({ bridge } = await startTestBridge({ redisUrl: redis.get().server.url, prefix: t.config.redisPrefix, layouts: [{ layoutId: LAYOUT.layoutId, playoutDelayMs: 0, maxAgeMs: 60_000, targets: [{ host: '127.0.0.1', port: dump.port }] }] }));
});
afterAll(async () => {
  await bridge?.stop();
  dump?.child.kill('SIGKILL');
  await t?.close();
});

const SCRIPTS = ['hello', 'crowd', 'привет', 'καλημέρα', 'مرحبا', 'שלום', '你好世界', 'こんにちは', 'नमस्ते', 'สวัสดี', 'Grüße', 'ÇÖĞÜŞ'];
const EMOJI = ['😀', '🎉', '👨\u200D👩\u200D👧', '🏳️\u200D🌈', '👍🏽', '❤️'];
const HOSTILE = ['\u0000', '\u0007', '\u001b[31m', '\u0085', '\u009b', '\u202E', '\u202D', '\u2066', '\u2069', '\u200B', '\u200C', '\u200D', '\u2060', '\uFEFF', '\u00AD', '\u0301', '\n', '\t'];
const LEET: Record<string, string> = { a: '4', e: '3', i: '1', o: '0', s: '$', t: '7' };
const SMALL_CAPS: Record<string, string> = Object.fromEntries([...'abcdefghijklmnopqrstuvwyz'].map((c, i) => [c, [...'ᴀʙᴄᴅᴇꜰɢʜɪᴊᴋʟᴍɴᴏᴘꞯʀꜱᴛᴜᴠᴡʏᴢ'][i]!]));
const UPSIDE_DOWN: Record<string, string> = Object.fromEntries([...'abcdefghijklmnopqrstuvwxyz'].map((c, i) => [c, [...'ɐqɔpǝɟƃɥᴉɾʞlɯuodbɹsʇnʌʍxʎz'][i]!]));
const CONTACTS = ['visit shop.xyz', 'shop dot app now', 'see shop[.]live', 'mail joe at shop dot com', 'call ٥٥٥١٢٣٤٥٦٧', 'call ५५५१२३४५६७', '555 - 123 - 4567', 'ring 555-CALL-NOW', 'shop。com'];
const INVISIBLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\u00ad]/;

function build(rand: () => number): { text: string; disguised: string | null } {
  const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const parts: string[] = [];
  const n = 1 + Math.floor(rand() * 6);
  for (let i = 0; i < n; i++) {
    const r = rand();
    if (r < 0.45) parts.push(pick(SCRIPTS));
    else if (r < 0.6) parts.push(pick(EMOJI));
    else if (r < 0.8) parts.push(pick(HOSTILE));
    else if (r < 0.85) parts.push(String.fromCharCode(0xd800 + Math.floor(rand() * 0x800))); // a lone surrogate: refused by the schema
    else if (r < 0.9) parts.push('x'.repeat(Math.floor(rand() * 1100))); // long: past 1,024 refused by the schema
    else parts.push(pick(SCRIPTS).toUpperCase());
  }
  let disguised: string | null = null;
  if (rand() < 0.33) {
    const word = pick(LISTED);
    let w = word;
    const trick = Math.floor(rand() * 10);
    if (trick === 0) w = w.toUpperCase();
    if (trick === 1) w = [...w].map((c) => String.fromCodePoint(c.codePointAt(0)! + 0xfee0)).join(''); // fullwidth
    if (trick === 2) w = [...w].map((c, i) => (i > 0 && LEET[c] && rand() < 0.5 ? LEET[c] : c)).join('');
    if (trick === 3) w = [...w].map((c) => (rand() < 0.3 ? c.repeat(3) : c)).join('');
    if (trick === 4) w = [...w].join(pick(['.', ' ', '-', '_']));
    if (trick === 5) w = [...w].join('\u200B');
    if (trick === 6) w = [...w].map((c) => SMALL_CAPS[c] ?? c).join('');
    if (trick === 7) w = [...w].reverse().map((c) => UPSIDE_DOWN[c] ?? c).join('');
    if (trick === 8) w = [...w].map((c) => `${c}\u20D2`).join('');
    if (trick === 9) w = `${w.slice(0, 3)}${pick(['-', '.', '_'])}${w.slice(3)}`;
    disguised = word;
    parts.splice(Math.floor(rand() * (parts.length + 1)), 0, ` ${w} `);
  } else if (rand() < 0.1) {
    disguised = 'contact';
    parts.splice(Math.floor(rand() * (parts.length + 1)), 0, ` ${pick(CONTACTS)} `);
  }
  return { text: parts.join(rand() < 0.5 ? ' ' : ''), disguised };
}

/** The text oscdump printed for a /002 line (it prints the string between quotes, unescaped). */
const shownText = (raw: string) => raw.slice(raw.indexOf('"') + 1, raw.lastIndexOf('"'));
/** Letters only, case-folded: the plain form a listed word takes in any text that shows it. */
const letters = (s: string) => s.normalize('NFKC').toLowerCase().replace(/[^a-z]/g, '');

describe(`moderation fuzz (FUZZ_SEED=${seed})`, () => {
  it('10,000 hostile Strings through filter: no 5xx; disguised words refused; what is shown is clean, once each', { timeout: 180_000 }, async () => {
    const rand = seededRandom(seed);
    const token = await mintToken(t, LAYOUT.layoutId, t.apiKey);
    const planned = Array.from({ length: TEXTS }, () => build(rand));
    const answers: { status: number; code: string | null }[] = new Array(TEXTS);
    let next = 0;
    let stalled: Promise<void> = Promise.resolve();
    await Promise.all(
      Array.from({ length: 24 }, async () => {
        while (next < TEXTS) {
          const i = next++;
          if (i === STALL_AT) stalled = stallRedis(redis.get().server, STALL_MS);
          const r = await postAction(t, token, { layoutId: LAYOUT.layoutId, lid: 2, type: 'String', value: planned[i]!.text });
          answers[i] = { status: r.status, code: r.body?.error?.code ?? null };
        }
      }),
    );
    await stalled;
    const where = (i: number) => `FUZZ_SEED=${seed}, text ${i}: ${JSON.stringify(planned[i]!.text).slice(0, 200)}`;
    answers.forEach((a, i) => {
      expect([200, 400], where(i)).toContain(a.status);
      if (a.status === 400) expect(['moderated', 'invalid_value', 'invalid_body'], where(i)).toContain(a.code);
      if (planned[i]!.disguised !== null) expect(a.status, where(i)).toBe(400);
    });
    const accepted = answers.filter((a) => a.status === 200).length;
    expect(accepted).toBeGreaterThan(TEXTS / 4); // the run tested the shown side too
    await eventually(() => dump.lines.filter((l) => l.address === '/002').length >= accepted, 60_000);
    await new Promise((r) => setTimeout(r, 500));
    const shown = dump.lines.filter((l) => l.address === '/002').map((l) => shownText(l.raw));
    expect(shown.length, `FUZZ_SEED=${seed}`).toBe(accepted);
    for (const s of shown) {
      expect(INVISIBLE.test(s), `FUZZ_SEED=${seed}: shown ${JSON.stringify(s)}`).toBe(false);
      for (const word of LISTED) expect(letters(s).includes(word), `FUZZ_SEED=${seed}: shown ${JSON.stringify(s)}`).toBe(false);
    }
    expect((await fetch(`http://127.0.0.1:${t.gw.opsPort}/healthz`)).status).toBe(200);
  });
});
