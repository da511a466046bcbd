// What the crowd may write: a String control's moderation policy, compiled once per control.
// Every String loses its control, bidi and zero-width characters before it is stored (cleanText),
// whatever the mode. A policy then folds the text for matching (NFKC, case folding, the marks of
// every script and invisibles off, digits of every script as 0-9, look-alike letters as Latin ones:
// normalise.ts) and looks for a word of its lists (also with separators evened out, and read the
// right way up), a link, an email address or a phone number (contacts.ts).
// The word matching is obscenity's (its English dataset with its whitelist, and its handling of
// leetspeak, look-alike letters and repeated letters); the other languages' words come from the
// List of Dirty, Naughty, Obscene and Otherwise Bad Words (npm naughty-words). Links and email
// addresses are found by linkify-it and by the syntax of a domain (contacts.ts).
import { createRequire } from 'node:module';
import { LRUCache } from 'lru-cache';
import {
  DataSet,
  RegExpMatcher,
  collapseDuplicatesTransformer,
  englishDataset,
  englishRecommendedTransformers,
  parseRawPattern,
  resolveConfusablesTransformer,
  resolveLeetSpeakTransformer,
  toAsciiLowerCaseTransformer,
} from 'obscenity';
import type { Control, Moderation } from '../../schemas/types.js';
import { hasEmail, hasLink, hasPhone } from './contacts.js';
import { readLikeLatin, rightWayUp } from './normalise.js';

export type ModerationMode = 'open' | 'filter' | 'hold';
/** Why a text was refused: a word of the layout's blocklist, of the word lists, a link, an email address, a phone number, its length. */
export type RefusalReason = 'blocklist' | 'profanity' | 'url' | 'email' | 'phone' | 'too_long';
export const REFUSAL_REASONS: readonly RefusalReason[] = ['blocklist', 'profanity', 'url', 'email', 'phone', 'too_long'];

/** The languages of the word lists: `en` is obscenity's English dataset, the others naughty-words' lists. */
export const WORD_LIST_LANGUAGES = ['en', 'ar', 'cs', 'da', 'de', 'eo', 'es', 'fa', 'fi', 'fil', 'fr', 'fr-CA-u-sd-caqc', 'hi', 'hu', 'it', 'ja', 'kab', 'ko', 'nl', 'no', 'pl', 'pt', 'ru', 'sv', 'th', 'tlh', 'tr', 'zh'] as const;

// C0 and C1 controls, bidi marks, embeddings, overrides and isolates, and the invisible characters
// (zero-width space, non-joiner and joiner, word joiner, invisible operators, BOM, soft hyphen,
// combining grapheme joiner, Mongolian vowel separator, Hangul fillers).
const LINE_CONTROLS = /[\t\n\v\f\r\u0085\u2028\u2029]+/g;
const STRIPPED = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\u00ad\u034f\u180e\u115f\u1160\u3164\uffa0]/g;

/**
 * The text as stored, in every mode: line breaks and tabs become one space, every other control,
 * bidi and zero-width character is removed.
 */
export function cleanText(text: string): string {
  return text.replace(LINE_CONTROLS, ' ').replace(STRIPPED, '');
}

/** Code points of a text (what maxLength counts). */
export function codePoints(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/** The text as matched: NFKC, marks and invisibles off, read like Latin (normalise.ts), case-folded. */
export function foldForMatching(text: string): string {
  return readLikeLatin(cleanText(text).normalize('NFKC')).toUpperCase().toLowerCase(); // upper then lower folds ß to ss and final sigma
}

/** Separators between words (hyphens, dashes, dots, underscores, slashes) as one space: "rival-fc" is "rival fc". */
export function evenSeparators(folded: string): string {
  return folded.replace(/(?<=[\p{L}\p{N}])[\s\-\u2010-\u2015._/\\|+~:]+(?=[\p{L}\p{N}])/gu, ' ');
}

/** One hyphen, dash, dot or underscore between two letters taken out: "ars-chloch" is "arschloch". */
export function withoutInnerSeparators(folded: string): string {
  return folded.replace(/(?<=[\p{L}\p{N}])[\-\u2010-\u2015._](?=[\p{L}\p{N}])/gu, '');
}

/**
 * Spellings of English words that its dataset does not read (a sound spelled another way, letters
 * swapped, a star for a letter) and the gesture: added to the English dataset when the policy has `en`.
 */
const ENGLISH_MORE = ['phuck', 'phuk', 'phuq', 'fcuk', 'fuk', 'fck', 'fuq', 'f**k', 'f*ck', 'fu*k', 'f*k', 'sh*t', 'b*tch', 'c*nt', 'a**hole', '\u{1f595}'];

/** A spelled-out run without its separators. */
const lettersOf = (run: string) => run.replace(/[^\p{L}\p{N}]/gu, '');

/** "f.u.c.k", "f u c k", "f_u_c_k", "f.u-c_k": single letters with separators between them, joined ("fuck"). */
export function joinSpelledOut(folded: string): string {
  return folded.replace(/(?<![\p{L}\p{N}])[\p{L}\p{N}](?:[^\p{L}\p{N}]{1,3}[\p{L}\p{N}](?![\p{L}\p{N}])){2,}/gu, lettersOf);
}

/**
 * The same, where the letters of a run share one separator: "r.i.v.a.l.f.c   x" is "rivalfc   x",
 * where joinSpelledOut also takes in the one-letter word after it ("rivalfcx").
 */
export function joinSpelledOutAlike(folded: string): string {
  return folded.replace(/(?<![\p{L}\p{N}])[\p{L}\p{N}]([^\p{L}\p{N}]{1,3})[\p{L}\p{N}](?![\p{L}\p{N}])(?:\1[\p{L}\p{N}](?![\p{L}\p{N}]))+/gu, lettersOf);
}

/** Punctuation that ends a word: before a space or the end. */
const TRAILING_PUNCTUATION = /[^\p{L}\p{N}\s]+(?=\s|$)/gu;

/** The text with every word made of digits only blanked out. */
export function withoutNumbers(folded: string): string {
  return folded.replace(/(?<![\p{L}\p{N}])\p{N}+(?![\p{L}\p{N}])/gu, ' ');
}

const require = createRequire(import.meta.url);
const lists = new Map<string, string[]>();
function wordList(language: string): string[] {
  let words = lists.get(language);
  if (!words) lists.set(language, (words = require(`naughty-words/${language}.json`) as string[]));
  return words;
}

/**
 * An obscenity pattern that matches the word literally: as a whole word in ASCII; anywhere in other
 * scripts (obscenity's word boundaries are ASCII's, and Chinese, Japanese and Thai have no spaces).
 */
function wordPattern(word: string, whole: boolean): ReturnType<typeof parseRawPattern> {
  const literal = word.replace(/[[\]?|\\]/g, (c) => `\\${c}`);
  return parseRawPattern(whole ? `|${literal}|` : literal);
}

const ASCII = /^[\x20-\x7e]*$/;

/** A word's letters with every run of one letter made one ("arschloch", "asesment"): how list words are matched. */
function collapsed(word: string): string {
  return word.replace(/(.)\1+/gu, '$1');
}

// List words are matched as obscenity matches its own dataset: look-alike letters, leetspeak and
// case resolved (Latin script only), then every run of a repeated letter made one, in the text and
// in the word alike ("arschllloch" is "arschloch").
const LATIN_TRANSFORMERS = [resolveConfusablesTransformer(), resolveLeetSpeakTransformer(), toAsciiLowerCaseTransformer(), collapseDuplicatesTransformer({ defaultThreshold: 1 })];
const OTHER_TRANSFORMERS = [collapseDuplicatesTransformer({ defaultThreshold: 1 })];

/** A matcher of whole words, each as its collapsed form, minus what the layout allows. */
function listMatcher(words: Iterable<string>, allow: ReadonlySet<string>): (text: string) => boolean {
  const latin = new DataSet<{ word: string }>();
  const other = new DataSet<{ word: string }>();
  const counts = { latin: 0, other: 0 };
  for (const raw of words) {
    const phrase = evenSeparators(foldForMatching(raw).trim());
    // a phrase of several words also as one ("rival fc" is "rivalfc" too)
    for (const word of new Set([phrase, phrase.replace(/\s+/gu, '')])) {
      if (word === '' || allow.has(word)) continue;
      const ascii = ASCII.test(word);
      (ascii ? latin : other).addPhrase((p) => p.setMetadata({ word }).addPattern(wordPattern(collapsed(word), ascii)));
      counts[ascii ? 'latin' : 'other']++;
    }
  }
  const whitelistedTerms = [...allow].map(collapsed);
  const m = (set: DataSet<{ word: string }>, transformers: typeof LATIN_TRANSFORMERS) =>
    new RegExpMatcher({ ...set.build(), whitelistedTerms, blacklistMatcherTransformers: transformers, whitelistMatcherTransformers: transformers });
  // a matcher with no words still transforms every text it is given: none is made
  const l = counts.latin > 0 ? m(latin, LATIN_TRANSFORMERS) : null;
  const o = counts.other > 0 ? m(other, OTHER_TRANSFORMERS) : null;
  return (text) => (l?.hasMatch(text) ?? false) || (o?.hasMatch(text) ?? false);
}

interface WordMatchers {
  /** the layout's blocklist */
  own: (text: string) => boolean;
  /** obscenity's English dataset, with its own whitelist and transformers */
  english: RegExpMatcher | null;
  /** the other languages' lists */
  lists: (text: string) => boolean;
}

function compileWords(m: Moderation): WordMatchers {
  const allow = new Set((m.allow ?? []).map(foldForMatching));
  const languages = m.languages ?? ['en'];
  let english: RegExpMatcher | null = null;
  if (languages.includes('en')) {
    const set = new DataSet<{ originalWord?: string }>().addAll(englishDataset).removePhrasesIf((p) => allow.has(String(p.metadata?.originalWord)));
    for (const word of ENGLISH_MORE) if (!allow.has(word)) set.addPhrase((p) => p.setMetadata({ originalWord: word }).addPattern(wordPattern(word, ASCII.test(word))));
    const built = set.build();
    english = new RegExpMatcher({ ...built, whitelistedTerms: [...(built.whitelistedTerms ?? []), ...allow], ...englishRecommendedTransformers });
  }
  return {
    own: listMatcher(m.blocklist ?? [], allow),
    english,
    lists: listMatcher(languages.filter((l) => l !== 'en').flatMap(wordList), allow),
  };
}


export class TextPolicy {
  readonly mode: ModerationMode;
  readonly maxLength: number | undefined;
  private readonly block: ReadonlySet<string>;
  private words: WordMatchers | undefined; // compiled on first use

  constructor(private readonly m: Moderation) {
    this.mode = m.mode;
    this.maxLength = m.maxLength;
    this.block = new Set(m.block ?? []);
  }

  /** Why the (cleaned) text is refused, or null when it may be shown (open: only its length is checked). */
  refusal(text: string): RefusalReason | null {
    if (this.maxLength !== undefined && codePoints(text) > this.maxLength) return 'too_long';
    if (this.mode === 'open') return null;
    const folded = foldForMatching(text);
    // before look-alikes are read: a flipped letter may look like another one
    const upright = rightWayUp(cleanText(text).normalize('NFKC').toLowerCase());
    const readings = upright === null ? [folded] : [folded, foldForMatching(upright)];
    // a word of digits only is a number ("row 455", "gate 717"), not leetspeak
    const views = [...new Set(readings.flatMap((r) => [r, joinSpelledOut(r), joinSpelledOutAlike(r), withoutInnerSeparators(r)].map(withoutNumbers)))];
    // as leetspeak reads "!" as "i", list words are also matched with the punctuation that ends a word taken off ("go rival fc!")
    const listViews = [...new Set(views.flatMap((v) => [v, v.replace(TRAILING_PUNCTUATION, ' ')]))];
    const lists = (this.words ??= compileWords(this.m));
    // the layout's own phrases also with the separators between words evened out ("rival-fc")
    const ownViews = [...new Set([...listViews, ...readings.map((r) => withoutNumbers(evenSeparators(r)))])];
    if (ownViews.some((v) => lists.own(v))) return 'blocklist';
    if (views.some((v) => lists.english?.hasMatch(v)) || listViews.some((v) => lists.lists(v))) return 'profanity';
    if (this.block.has('emails') && hasEmail(folded)) return 'email';
    if (this.block.has('urls') && hasLink(folded)) return 'url';
    if (this.block.has('phones') && hasPhone(folded)) return 'phone';
    return null;
  }
}

const policies = new WeakMap<Control, TextPolicy>();
/**
 * Policies by their JSON: a layout re-loaded (every page switch) brings new control objects, and
 * compiling a policy's lists takes milliseconds (the moderation probe, bench/moderation.ts in git history), so one that did not change is
 * not compiled again.
 */
const byText = new LRUCache<string, TextPolicy>({ max: 1000 });

/** The control's policy, compiled once per process for each distinct policy; null for an unmoderated control. */
export function policyOf(control: Control): TextPolicy | null {
  if (!control.moderation) return null;
  let p = policies.get(control);
  if (!p) {
    const key = JSON.stringify(control.moderation);
    p = byText.get(key);
    if (!p) byText.set(key, (p = new TextPolicy(control.moderation)));
    policies.set(control, p);
  }
  return p;
}
