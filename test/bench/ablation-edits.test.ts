// bench:ablation and bench:live-ablation measure each step of POST /action and of the socket action
// by editing the compiled gateway; an edit whose text is gone would stop the accounting (or, worse,
// edit code off the hot path). Every edit must still apply, exactly once, to this build.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ABLATIONS, LIVE_ABLATIONS, ablatedCopy, cumulative, editedText } from '../../bench/action-ablation-edits.js';

const DIST = fileURLToPath(new URL('../../dist/', import.meta.url));

describe('bench:ablation', () => {
  it.each(ABLATIONS.filter((a) => a.edits.length > 0).map((a) => [a.name, a] as const))('the %s edit applies to the built gateway exactly once', (_name, a) => {
    for (const e of a.edits) expect(() => editedText(DIST, a, e)).not.toThrow();
  });

  it.each(LIVE_ABLATIONS.map((a) => [a.name, a] as const))('the live %s edits apply to the built gateway exactly once', (_name, a) => {
    for (const e of a.edits) expect(() => editedText(DIST, a, e)).not.toThrow();
  });

  it('makes each live build with the edits of those before it', () => {
    const root = mkdtempSync(join(tmpdir(), 'ac-live-ablation-'));
    try {
      const builds = cumulative(LIVE_ABLATIONS);
      const last = builds.at(-1)!;
      expect(last.edits).toHaveLength(LIVE_ABLATIONS.flatMap((a) => a.edits).length);
      const main = ablatedCopy(DIST, root, last);
      for (const e of last.edits) {
        const text = readFileSync(join(root, 'dist', e.file), 'utf8');
        expect(text).toContain(e.replace);
        if (!e.replace.includes(e.find)) expect(text).not.toContain(e.find);
      }
      expect(readFileSync(main, 'utf8')).toBe(readFileSync(join(DIST, 'gateway', 'main.js'), 'utf8'));
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('leaves every file of every live build valid JavaScript (the edits of one file compose)', () => {
    const root = mkdtempSync(join(tmpdir(), 'ac-live-ablation-'));
    try {
      for (const build of cumulative(LIVE_ABLATIONS)) {
        ablatedCopy(DIST, join(root, build.name), build);
        for (const file of new Set(build.edits.map((e) => e.file))) {
          expect(() => execFileSync(process.execPath, ['--check', join(root, build.name, 'dist', file)], { stdio: 'pipe' }), `${build.name}: ${file}`).not.toThrow();
        }
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
