// Links, email addresses and phone numbers in a folded text (text-policy.ts), in the forms people
// use to get them past a filter: any syntactically valid domain (its top-level domain need not be
// one a list knows), "[.]", "(dot)" and " dot " for the dot, "(at)" and " at " for the @, letters
// spaced out one by one, digits of every script (folded to 0-9 before), up to three separator
// characters between digits, and keypad letters ("555-CALL-NOW").
import LinkifyIt from 'linkify-it';

const linkify = new LinkifyIt({ fuzzyLink: true, fuzzyEmail: true, fuzzyIP: true });

const LABEL = String.raw`[\p{L}\p{N}](?:[\p{L}\p{N}-]{0,61}[\p{L}\p{N}])?`;
const TLD = String.raw`(?:\p{L}{2,63}|xn--[a-z0-9-]{1,59})`;
const DOMAIN = String.raw`(?:${LABEL}\.)+${TLD}`;
const DOMAIN_ALONE = new RegExp(String.raw`(?<![\p{L}\p{N}_@.-])${DOMAIN}(?![\p{L}\p{N}@])`, 'u');
const EMAIL = new RegExp(String.raw`[\p{L}\p{N}._%+-]+@${DOMAIN}(?![\p{L}\p{N}])`, 'u');

const BRACKETED_DOT = /\s*[[({<]\s*(?:dot|\.)\s*[\])}>]\s*/gu;
const WORD_DOT = /(?<=[\p{L}\p{N}])\s+dot\s+(?=[\p{L}\p{N}])/gu;
const BRACKETED_AT = /\s*[[({<]\s*at\s*[\])}>]\s*/gu;
const WORD_AT = /(?<=[\p{L}\p{N}])\s+at\s+(?=[\p{L}\p{N}])/gu;
/** three or more one-character tokens with single spaces between them: "e x a m p l e . c o m" */
const SPACED_OUT = /(?<!\S)\S(?: \S(?!\S)){2,}/gu;

/** Seven or more digits with at most three separator characters between neighbours. */
const PHONE = /(?:\+|\b)\d(?:[\s().\-/]{0,3}\d){6,}/u;
/** Three digits, then two groups of three or four letters or digits: a keypad number ("555-call-now", "555 1o1 2o2o"). */
const KEYPAD = /(?<![\p{L}\p{N}])\d{3}(?:[\s.\-]{1,3}[a-z0-9]{3,4}){2}(?![\p{L}\p{N}])/u;

/** The text with the dot and the @ written out put back, and spaced-out letters joined. */
function undisguised(folded: string, at: boolean): string {
  let t = folded.replace(SPACED_OUT, (run) => run.replace(/ /g, '')).replace(BRACKETED_DOT, '.').replace(WORD_DOT, '.');
  if (at) t = t.replace(BRACKETED_AT, '@').replace(WORD_AT, '@');
  return t;
}

export function hasEmail(folded: string): boolean {
  if ((linkify.match(folded) ?? []).some((l) => l.schema === 'mailto:')) return true;
  return EMAIL.test(undisguised(folded, true));
}

export function hasLink(folded: string): boolean {
  if ((linkify.match(folded) ?? []).some((l) => l.schema !== 'mailto:')) return true;
  const plain = undisguised(folded, false);
  // an address's domain is the email's, not a link
  return DOMAIN_ALONE.test(plain.replace(new RegExp(EMAIL.source, 'gu'), ' '));
}

export function hasPhone(folded: string): boolean {
  return PHONE.test(folded) || KEYPAD.test(folded);
}
