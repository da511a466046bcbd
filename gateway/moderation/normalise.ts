// How a text is read before a policy matches it, beyond NFKC and case: the marks of every script
// off (U+20D2's overlay too), the digits of every script as 0-9, dot-like characters as ".", and
// letters that look like Latin ones as those: Unicode's confusables (TR39, through unhomoglyph, for
// every character outside ASCII), small capitals, and upside-down text (read back to front).
import unhomoglyph from 'unhomoglyph';

/** Pairs: a look-alike, then the Latin letter it stands for (those unhomoglyph leaves as they are). */
const SMALL_CAPS = 'ᴀaʙbᴄcᴅdᴇeꜰfɢgʜhɪiᴊjᴋkʟlᴍmɴnᴏoᴘpꞯqʀrꜱsᴛtᴜuᴠvᴡwʏyᴢzĸkʊu';
/** Pairs of upside-down text: the flipped letter, then the one it stands for. */
const FLIPPED = ['ɐa', 'qb', 'ɔc', 'pd', 'ǝe', 'ɟf', 'ƃg', 'ɥh', 'ᴉi', 'ıi', 'ɾj', 'ʞk', 'ɯm', 'un', 'oo', 'dp', 'bq', 'ɹr', 'ʇt', 'nu', 'ʌv', 'ʍw', 'ʎy'].join('');
/** Flipped letters no ordinary text uses: one of them marks a text as upside down. */
const FLIPPED_ONLY = /[ɐɔǝɟƃɥᴉɾʞɯɹʇʌʍʎ]/u;
const DOT_LIKE = /[\u3002\uff0e\uff61\u2024\u2e31\u0701\u0702\ufe52]/gu;
const MARKS = /\p{M}+/gu;

function pairs(table: string): Map<string, string> {
  const chars = [...table];
  const map = new Map<string, string>();
  for (let i = 0; i < chars.length; i += 2) map.set(chars[i]!, chars[i + 1]!);
  return map;
}
const SMALL = pairs(SMALL_CAPS);
const FLIP = pairs(FLIPPED);

/** Every decimal digit of Unicode (\p{Nd}, in runs of ten from zero) by its value. */
const DIGITS = (() => {
  const map = new Map<string, string>();
  const nd = /\p{Nd}/u;
  for (let cp = 0x80; cp <= 0x1fbff; cp++) {
    const c = String.fromCodePoint(cp);
    if (!nd.test(c)) continue;
    let zero = cp;
    while (zero > 0 && nd.test(String.fromCodePoint(zero - 1)) && cp - zero < 9) zero--;
    map.set(c, String((cp - zero) % 10));
  }
  return map;
})();
const NON_ASCII = /[^\x00-\x7f]/u;

/** One character as a Latin reader would read it: a digit, a dot, a Latin look-alike, or itself. */
function readAs(c: string): string {
  const digit = DIGITS.get(c);
  if (digit !== undefined) return digit;
  const small = SMALL.get(c);
  if (small !== undefined) return small;
  const plain = unhomoglyph(c);
  return NON_ASCII.test(plain) ? (SMALL.get(plain) ?? c) : plain;
}

/**
 * The text with marks off and every character read as above; `text` is NFKC already. Upper then
 * lower case afterwards (so a look-alike capital becomes a small letter).
 */
export function readLikeLatin(text: string): string {
  const bare = text.normalize('NFD').replace(MARKS, '').normalize('NFC').replace(DOT_LIKE, '.');
  if (!NON_ASCII.test(bare)) return bare;
  let out = '';
  for (const c of bare) out += c.charCodeAt(0) < 0x80 ? c : readAs(c);
  return out;
}

/** Upside-down text read the right way up (reversed, each letter turned back), or null when it is not upside down. */
export function rightWayUp(text: string): string | null {
  if (!FLIPPED_ONLY.test(text)) return null;
  let out = '';
  for (const c of [...text].reverse()) out += FLIP.get(c) ?? c;
  return out;
}
