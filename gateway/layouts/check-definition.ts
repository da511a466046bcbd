// Checks a layout definition: its JSON Schema and what the schema cannot say. Every problem is
// reported at once (up to MAX_PROBLEMS), each naming its path, so a layout is fixed in one pass,
// not one error a run.
import { aggregateProblem } from '../../schemas/aggregate.js';
import { describeErrors, validateLayoutDefinitionAll } from '../../schemas/validators.js';
import type { LayoutDefinition } from '../../schemas/types.js';
import { AppError } from '../errors.js';
import { canvasProblem, type LightCanvasDefinition } from '../../schemas/light.js';

/**
 * Objects and arrays nested at most this deep, counted from the definition itself (which is 1;
 * a control's props are 6). Redis's Lua JSON refuses 1,000 levels, and no layout needs 32.
 */
export const MAX_DEPTH = 32;
/** The definition's JSON at most this long (the admin page's body limit is 1 MiB too). */
export const MAX_CHARS = 1024 * 1024;
/** Problems reported at most; past it the answer says how many more there are. */
export const MAX_PROBLEMS = 50;

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

type Obj = Record<string, unknown>;
const isObj = (x: unknown): x is Obj => typeof x === 'object' && x !== null && !Array.isArray(x);
const listOf = (x: unknown): unknown[] => (Array.isArray(x) ? x : []);

/** The pages and their controls, as far as they are objects, with their paths (the input is not trusted yet). */
function* controlsOf(input: Obj): Generator<{ page: Obj; p: number; c: Obj; i: number }> {
  for (const [p, page] of listOf(input.pages).entries()) {
    if (!isObj(page)) continue;
    for (const [i, c] of listOf(page.controls).entries()) if (isObj(c)) yield { page, p, c, i };
  }
}

/** What the schema cannot say: aggregates that do not fit their control, duplicate ids, option indices, the active page. */
function ruleProblems(input: Obj): string[] {
  const out: string[] = [];
  const pageIds = new Set<unknown>();
  for (const [p, page] of listOf(input.pages).entries()) {
    if (!isObj(page) || typeof page.pageId !== 'string') continue;
    if (pageIds.has(page.pageId)) out.push(`layout.pages[${p}].pageId "${page.pageId}" appears twice`);
    pageIds.add(page.pageId);
  }
  const lids = new Map<unknown, string>();
  const addresses = new Map<unknown, string>();
  for (const { page, p, c, i } of controlsOf(input)) {
    const path = `layout.pages[${p}].controls[${i}]`;
    const where = `${typeof page.pageId === 'string' ? `page ${JSON.stringify(page.pageId)} ` : ''}lid ${JSON.stringify(c.lid)}`;
    if ('aggregate' in c) {
      const problem = aggregateProblem(c.type, c.aggregate);
      if (problem) out.push(`${path} (${where}, ${String(c.type)}): ${problem}`);
    }
    if ('moderation' in c && c.type !== 'String') out.push(`${path} (${where}, ${String(c.type)}): moderation is for String controls only`);
    if (typeof c.lid === 'number') {
      const at = lids.get(c.lid);
      if (at) out.push(`${path}: lid ${c.lid} is used twice (${at} and ${path})`);
      else lids.set(c.lid, path);
    }
    if (typeof c.address === 'string') {
      const at = addresses.get(c.address);
      if (at) out.push(`${path}: address ${c.address} is used twice (${at} and ${path})`);
      else addresses.set(c.address, path);
    }
    if (Array.isArray(c.options)) {
      const indices = c.options.map((o) => (isObj(o) ? o.index : undefined)).sort((a, b) => Number(a) - Number(b));
      if (indices.some((ix, n) => ix !== n)) out.push(`${path} (${where}): option indices must be exactly 0..${c.options.length - 1}`);
    }
  }
  if (isObj(input.light) && canvasShaped(input.light)) {
    const zones = Array.isArray(input.zones) ? input.zones.filter((z): z is string => typeof z === 'string') : [];
    const problem = canvasProblem(input.light, zones);
    if (problem) out.push(`layout.${problem}`);
  }
  if (typeof input.activePageId === 'string' && pageIds.size > 0 && !pageIds.has(input.activePageId)) out.push(`layout.activePageId "${input.activePageId}" is not one of the pages (${[...pageIds].map((x) => JSON.stringify(x)).join(', ')})`);
  return out;
}

/** Whether a light canvas has the shape its rules read (the schema reports the rest). */
function canvasShaped(light: Obj): light is Obj & LightCanvasDefinition {
  const { zones } = light;
  return zones === undefined || (Array.isArray(zones) && zones.every((z) => typeof z === 'string'));
}

/** Every problem of a definition, each naming its path (none: it is valid). */
export function layoutProblems(input: unknown): string[] {
  const tooDeep = deeperThan(input, MAX_DEPTH);
  if (tooDeep !== null) return [`layout${tooDeep} is nested deeper than ${MAX_DEPTH} levels`];
  const size = JSON.stringify(input)?.length ?? 0;
  if (size > MAX_CHARS) return [`the definition is ${size} characters of JSON; at most ${MAX_CHARS}`];
  if (!isObj(input)) return ['layout must be an object'];
  const rules = ruleProblems(input);
  // an aggregate that does not fit is said once, by the rule that names what is allowed
  const aggregatePaths = rules.filter((r) => r.includes(': aggregate') || r.includes('takes no aggregate')).map((r) => r.slice(0, r.indexOf(' (')));
  const schema = validateLayoutDefinitionAll(input) ? [] : describeErrors(validateLayoutDefinitionAll.errors, 'layout').filter((s) => !aggregatePaths.some((p) => s.startsWith(`${p}.aggregate`)));
  return [...new Set([...schema, ...rules])];
}

/**
 * Returns the definition if it is valid, else throws invalid_layout listing every problem (up to
 * MAX_PROBLEMS), one a line: nesting deeper than MAX_DEPTH or JSON longer than MAX_CHARS (checked
 * first, alone), schema errors, aggregates that do not fit their control, duplicate pageIds, lids
 * or addresses, Index options whose indices are not exactly 0..n-1, an activePageId not among the
 * pages.
 */
export function checkLayoutDefinition(input: unknown): LayoutDefinition {
  const problems = layoutProblems(input);
  if (problems.length === 0) {
    const { $schema: _, ...def } = input as LayoutDefinition & { $schema?: string }; // an editor's hint, not the layout's
    return def;
  }
  if (problems.length === 1) throw new AppError('invalid_layout', problems[0]);
  const shown = problems.slice(0, MAX_PROBLEMS);
  const more = problems.length - shown.length;
  throw new AppError('invalid_layout', [`${problems.length} problems in the layout definition:`, ...shown.map((s) => `- ${s}`), ...(more > 0 ? [`(and ${more} more)`] : [])].join('\n'));
}
