// A String control's moderation policy on its own (gateway/moderation/text-policy.ts): what every
// String loses, how a text is folded for matching, and what each list, block and allowance does.
import { describe, expect, it } from 'vitest';
import { publicControl } from '../../gateway/layouts/layout-cache.js';
import { TextPolicy, cleanText, codePoints, foldForMatching, joinSpelledOut, joinSpelledOutAlike, policyOf } from '../../gateway/moderation/text-policy.js';

const filter = (extra: object = {}) => new TextPolicy({ mode: 'filter', ...extra });

describe('cleanText', () => {
  it('drops C0, C1, bidi and zero-width characters and makes line breaks and tabs one space', () => {
    expect(cleanText('a\u0000b\u001fc\u007fd\u0085e\u009ff\u202Eg\u2066h\u200Bi\u200Dj\uFEFFk\u00ADl\u180Em\tn\r\no')).toBe('abcd efghijklm n o');
    expect(cleanText('👩\u200D👩\u200D👧')).toBe('👩👩👧');
    expect(cleanText('plain text, émoji 🎉')).toBe('plain text, émoji 🎉');
  });

  it('counts code points, not UTF-16 units', () => {
    expect(codePoints('😀😀')).toBe(2);
  });
});

describe('folding', () => {
  it('takes NFKC, case and Latin diacritics off, and joins letters spelled out one by one', () => {
    expect(foldForMatching('ＦＵＣＫ Straße Ça')).toBe('fuck strasse ca');
    expect(joinSpelledOut('say f.u.c.k or b a n a n a, not an a')).toBe('say fuck or banana, not an a');
    expect(joinSpelledOut('f.u-c_k')).toBe('fuck');
  });

  it('also joins a spelled-out word without the one-letter word after it (FUZZ_SEED=1924187609, text 4329)', () => {
    expect(joinSpelledOutAlike('crowd grusse  r.i.v.a.l.f.c   x')).toBe('crowd grusse  rivalfc   x');
    const policy = new TextPolicy({ mode: 'filter', blocklist: ['rivalfc'] });
    expect(policy.refusal('crowd Grüße  r.i.v.a.l.f.c   x')).toBe('blocklist');
    expect(policy.refusal('go r.i.v.a.l.f.c a')).toBe('blocklist');
  });
});

describe('TextPolicy', () => {
  it('refuses the English dataset\'s words through leetspeak, look-alikes and repeated letters, and keeps its whitelist', () => {
    for (const t of ['shit', 'sh1t', 'a$$hole', 'fuuuuck', 'ｆｕｃｋ']) expect(filter().refusal(t), t).toBe('profanity');
    for (const t of ['Scunthorpe', 'classic assessment', 'cocktail party', 'hello world']) expect(filter().refusal(t), t).toBeNull();
  });

  it('reads a word of digits only as a number, not as leetspeak', () => {
    for (const t of ['row 455', 'gate 717', '455']) expect(filter().refusal(t), t).toBeNull();
    expect(filter().refusal('a55')).toBe('profanity');
  });

  it('matches the lists of the languages it names, with repeated letters, and only those', () => {
    expect(filter().refusal('du arschloch')).toBeNull();
    expect(filter({ languages: ['en', 'de'] }).refusal('du arschllloch')).toBe('profanity');
    expect(filter({ languages: ['ru'] }).refusal('ты хуй')).toBe('profanity');
  });

  it('takes the layout\'s own blocklist as whole words, and lets the layout allow a listed word', () => {
    const p = filter({ blocklist: ['Rival FC'], allow: ['dick'] });
    expect(p.refusal('go rival fc!')).toBe('blocklist');
    expect(p.refusal('r.i.v.a.l fc')).toBe('blocklist');
    expect(p.refusal('arrival fcs')).toBeNull();
    expect(p.refusal('Philip K. Dick night')).toBeNull();
    expect(filter().refusal('Philip K. Dick night')).toBe('profanity');
  });

  it('refuses links, email addresses and phone numbers only when the policy blocks them', () => {
    const p = filter({ block: ['urls', 'emails', 'phones'] });
    expect(p.refusal('see example.com')).toBe('url');
    expect(p.refusal('hello.world')).toBe('url'); // any syntactically valid domain, whether or not a list knows its TLD
    expect(p.refusal('pi is 3.14, e.g. so')).toBeNull();
    expect(p.refusal('me@example.org')).toBe('email');
    expect(p.refusal('call 0151 2345 678')).toBe('phone');
    expect(p.refusal('we won 3-1 in 2026')).toBeNull();
    expect(filter().refusal('see example.com')).toBeNull();
  });

  it('normalises before matching: the show\'s own words with separators or none, and look-alikes of every script', () => {
    const own = filter({ blocklist: ['rival fc'] });
    for (const t of ['rival-fc', 'rival.fc', 'rivalfc', 'rival_fc', 'go RIVAL–FC go']) expect(own.refusal(t), t).toBe('blocklist');
    for (const t of ['arrival fcs', 'survival fc5', 'rivals fc']) expect(own.refusal(t), t).toBeNull();
    const words = filter();
    const disguised = ['ꜰᴜᴄᴋ', 'ꜰᴜᴄᴋ you', 'ᏴᎥᎢᏟᎻ', 'fu\u20d2ck', 'ʞɔnɟ', 'ʞɔnɟ noʎ', 'ɥɔʇᴉq', 'pɹɐʇsɐq', 'phuck', 'fcuk', 'f**k', 'f*ck', 'what the 🖕', 'ｆｕｃｋ', 'fʊck'];
    for (const t of disguised) expect(words.refusal(t), t).toBe('profanity');
    for (const t of ['what a show', 'fuchsia lights', 'cocktail hour', 'Scunthorpe United', 'thumbs up 👍']) expect(words.refusal(t), t).toBeNull();
  });

  it('refuses links on any valid domain and in obfuscated forms, emails spelled out, and phone numbers in any script\'s digits', () => {
    const p = filter({ block: ['urls', 'emails', 'phones'] });
    const links = ['visit example.xyz', 'rival.app', 'show.live', 'buy.online', 'my.site', 'best.top', 'night.club', 'example。com', 'example．com', 'example[.]com', 'example(.)com', 'example dot com', 'example (dot) com', 'e x a m p l e . c o m', 'пример.рф', 'xn--e1afmkfd.xn--p1ai'];
    for (const t of links) expect(p.refusal(t), t).toBe('url');
    for (const t of ['joe at example dot com', 'joe (at) example (dot) com', 'joe@example.xyz', 'joe [at] example [dot] com']) expect(p.refusal(t), t).toBe('email');
    const phones = ['call ٥٥٥١٢٣٤٥٦٧', 'call ५५५१२३४५६७', '555 - 123 - 4567', '555-CALL-NOW', '555 1O1 2O2O', '(555) 123-4567'];
    for (const t of phones) expect(p.refusal(t), t).toBe('phone');
    for (const t of ['we won 3-1 in 2026', 'row 12 seat 34', 'at the end dot', 'see you at 8', 'gate 7, block 12']) expect(p.refusal(t), t).toBeNull();
  });

  it('open only counts the length; maxLength counts code points', () => {
    const open = new TextPolicy({ mode: 'open', maxLength: 3 });
    expect(open.refusal('shit')).toBe('too_long');
    expect(open.refusal('abc')).toBeNull();
    expect(open.refusal('😀😀😀')).toBeNull();
    expect(new TextPolicy({ mode: 'open' }).refusal('shit')).toBeNull();
  });

  it('shows apps a control\'s mode and length, never its lists', () => {
    const control = { lid: 1, address: '/001', type: 'String' as const, props: { label: 'x' }, moderation: { mode: 'hold' as const, maxLength: 9, blocklist: ['secret'], allow: ['x'] } };
    expect(publicControl(control).moderation).toEqual({ mode: 'hold', maxLength: 9 });
  });
});

describe('policyOf', () => {
  it('compiles a policy once per process: a re-loaded layout\'s equal policy is the same one', () => {
    const control = () => ({ lid: 1, address: '/001', type: 'String' as const, props: { label: 'x' }, moderation: { mode: 'filter' as const, languages: ['en', 'de'] } });
    const first = policyOf(control());
    expect(first).not.toBeNull();
    expect(policyOf(control())).toBe(first);
    expect(policyOf({ ...control(), moderation: { mode: 'filter', languages: ['en'] } })).not.toBe(first);
    expect(policyOf({ lid: 2, address: '/002', type: 'String', props: { label: 'y' } })).toBeNull();
  });
});
