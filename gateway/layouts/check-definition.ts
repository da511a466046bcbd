// Checks a layout definition beyond its JSON Schema: what the schema cannot say.
import { aggregateProblem } from '../../schemas/aggregate.js';
import { describeFirstError, validateLayoutDefinition } from '../../schemas/validators.js';
import type { LayoutDefinition } from '../../schemas/types.js';
import { AppError } from '../errors.js';

/**
 * Objects and arrays nested at most this deep, counted from the definition itself (which is 1;
 * a control's props are 6). Redis's Lua JSON refuses 1,000 levels, and no layout needs 32.
 */
export const MAX_DEPTH = 32;
/** The definition's JSON at most this long (the admin page's body limit is 1 MiB too). */
export const MAX_CHARS = 1024 * 1024;

/** The path (".pages[0].controls[0]...") of the first object or array deeper than `max`, or null. Iterative: any depth is safe. */
function deeperThan(root: unknown, max: number): string | null {
  const stack: { value: unknown; depth: number; path: string }[] = [{ value: root, depth: 1, path: '' }];
  while (stack.length > 0) {
    const { value, depth, path } = stack.pop()!;
    if (value === null || typeof value !== 'object') continue;
    if (depth > max) return path;
    const entries = Array.isArray(value) ? value.map((v, i) => [`[${i}]`, v] as const) : Object.entries(value).map(([k, v]) => [`.${k}`, v] as const);
    for (const [step, v] of entries) stack.push({ value: v, depth: depth + 1, path: path + step });
  }
  return null;
}

/** The first control whose `aggregate` does not fit, named with its page, lid and type (before the schema check, so the message can say what is allowed). */
function aggregateRefusal(input: unknown): string | null {
  const pages = (input as { pages?: unknown } | null)?.pages;
  if (!Array.isArray(pages)) return null;
  for (const [p, page] of pages.entries()) {
    const controls = (page as { controls?: unknown } | null)?.controls;
    if (!Array.isArray(controls)) continue;
    for (const [i, c] of controls.entries()) {
      if (typeof c !== 'object' || c === null || !('aggregate' in c)) continue;
      const { type, lid, aggregate } = c as { type?: unknown; lid?: unknown; aggregate: unknown };
      const problem = aggregateProblem(type, aggregate);
      const pageId = (page as { pageId?: unknown }).pageId;
      if (problem) return `layout.pages[${p}].controls[${i}] (page ${JSON.stringify(pageId)} lid ${JSON.stringify(lid)}, ${String(type)}): ${problem}`;
    }
  }
  return null;
}

/**
 * Returns the definition if it is valid, else throws invalid_layout naming the first problem:
 * nesting deeper than MAX_DEPTH or JSON longer than MAX_CHARS (checked first), schema errors, activePageId not among the pages, duplicate pageIds, lids or addresses within
 * the layout, Index options whose indices are not exactly 0..n-1.
 */
export function checkLayoutDefinition(input: unknown): LayoutDefinition {
  const tooDeep = deeperThan(input, MAX_DEPTH);
  if (tooDeep !== null) throw new AppError('invalid_layout', `layout${tooDeep} is nested deeper than ${MAX_DEPTH} levels`);
  const size = JSON.stringify(input)?.length ?? 0;
  if (size > MAX_CHARS) throw new AppError('invalid_layout', `the definition is ${size} characters of JSON; at most ${MAX_CHARS}`);
  const aggregate = aggregateRefusal(input);
  if (aggregate !== null) throw new AppError('invalid_layout', aggregate);
  if (!validateLayoutDefinition(input)) throw new AppError('invalid_layout', describeFirstError(validateLayoutDefinition.errors, 'layout'));
  const def = input;
  const pageIds = new Set<string>();
  const lids = new Map<number, string>();
  const addresses = new Map<string, string>();
  for (const page of def.pages) {
    if (pageIds.has(page.pageId)) throw new AppError('invalid_layout', `pageId "${page.pageId}" appears twice`);
    pageIds.add(page.pageId);
    for (const c of page.controls) {
      const where = `page "${page.pageId}" lid ${c.lid}`;
      const lidAt = lids.get(c.lid);
      if (lidAt) throw new AppError('invalid_layout', `lid ${c.lid} is used twice (${lidAt} and ${where})`);
      lids.set(c.lid, where);
      const addrAt = addresses.get(c.address);
      if (addrAt) throw new AppError('invalid_layout', `address ${c.address} is used twice (${addrAt} and ${where})`);
      addresses.set(c.address, where);
      if (c.options) {
        const indices = c.options.map((o) => o.index).sort((a, b) => a - b);
        if (indices.some((ix, n) => ix !== n)) {
          throw new AppError('invalid_layout', `${where}: option indices must be exactly 0..${c.options.length - 1}`);
        }
      }
    }
  }
  if (!pageIds.has(def.activePageId)) throw new AppError('invalid_layout', `activePageId "${def.activePageId}" is not one of the pages`);
  return def;
}
