// bench/README.md's table of current figures is made from a bench result, never by hand: it must be
// exactly what `npm run bench:table` makes of the newest result in bench/results/.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { TABLE_END, TABLE_START, figuresTable, newestResult, type BenchResult } from '../../bench/figures-table.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe("bench/README.md's figures", () => {
  it('are the newest bench result, as the generator writes them', () => {
    const file = newestResult(join(ROOT, 'bench/results'));
    expect(file, 'no suite result in bench/results').not.toBeNull();
    const readme = readFileSync(join(ROOT, 'bench/README.md'), 'utf8');
    const table = readme.slice(readme.indexOf(TABLE_START), readme.indexOf(TABLE_END) + TABLE_END.length);
    const result = JSON.parse(readFileSync(file!, 'utf8')) as BenchResult;
    expect(table).toBe(figuresTable(result, `bench/results/${file!.split('/').pop()}`));
    expect(table).toMatch(/\| yes \|/); // a table of figures, not an empty frame
  });
});
