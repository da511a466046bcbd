// The run's temporary directory (test/global-setup.ts) is one directory under the system's, however
// many projects vitest.config.ts holds: vitest runs the global setup once for the root and once for
// each project, and a directory made in each, one inside the other, made paths too long for a Unix
// socket (108 bytes: Chromium's profile lock, sd_notify's socket), so those tests failed at start.
import { basename, dirname } from 'node:path';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';

describe('the test run\'s temporary directory', () => {
  it('is one run directory directly under the system\'s', () => {
    expect(basename(tmpdir())).toMatch(/^ac-test-run-/);
    expect(basename(dirname(tmpdir()))).not.toMatch(/^ac-test-run-/);
  });

  it('holds the run\'s key-encryption key', () => {
    expect(dirname(process.env.SIGNING_KEK_FILE!)).toBe(tmpdir());
  });
});
