// Checks a layout definition beyond its JSON Schema: what the schema cannot say.
import { describeFirstError, validateLayoutDefinition } from '../../schemas/validators.js';
import type { LayoutDefinition } from '../../schemas/types.js';
import { AppError } from '../errors.js';

/**
 * Returns the definition if it is valid, else throws invalid_layout naming the first problem:
 * schema errors, activePageId not among the pages, duplicate pageIds, lids or addresses within
 * the layout, Index options whose indices are not exactly 0..n-1.
 */
export function checkLayoutDefinition(input: unknown): LayoutDefinition {
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
