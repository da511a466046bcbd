// bench:ablation measures each step of POST /action by editing the compiled gateway; an edit whose
// text is gone would stop the accounting (or, worse, edit code off the hot path). Every edit must
// still apply, exactly once, to this build.
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ABLATIONS, editedText } from '../../bench/action-ablation-edits.js';

const DIST = fileURLToPath(new URL('../../dist/', import.meta.url));

describe('bench:ablation', () => {
  it.each(ABLATIONS.filter((a) => a.edits.length > 0).map((a) => [a.name, a] as const))('the %s edit applies to the built gateway exactly once', (_name, a) => {
    for (const e of a.edits) expect(() => editedText(DIST, a, e)).not.toThrow();
  });
});
