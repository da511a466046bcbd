// One temporary directory for the whole test run: every test file's process inherits it as TMPDIR,
// so the config files, Redis data directories and sockets the tests create under os.tmpdir() are
// all removed at the end instead of piling up in /tmp. The run's key-encryption key for the signing
// secrets (SIGNING_KEK_FILE) lives there too: the gateways and audiencectl of every test use it.
// vitest runs this once for the root and once for each project, in one process: the first call
// makes the directory and removes it at the end; the others use it as it is (a directory inside
// another would make socket paths too long for a Unix socket).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureKekFile } from '../gateway/store/signing-kek.js';

const RUN_DIR = 'AUDIENCE_TEST_RUN_DIR';

export default function setup(): () => void {
  if (process.env[RUN_DIR]) return () => {};
  const dir = mkdtempSync(join(tmpdir(), 'ac-test-run-'));
  process.env[RUN_DIR] = dir;
  process.env.TMPDIR = dir;
  process.env.SIGNING_KEK_FILE = ensureKekFile(join(dir, 'signing-kek'));
  return () => {
    rmSync(dir, { recursive: true, force: true });
    delete process.env[RUN_DIR];
  };
}
