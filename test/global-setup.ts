// One temporary directory for the whole test run: every test file's process inherits it as TMPDIR,
// so the config files, Redis data directories and sockets the tests create under os.tmpdir() are
// all removed at the end instead of piling up in /tmp. The run's key-encryption key for the signing
// secrets (SIGNING_KEK_FILE) lives there too: the gateways and audiencectl of every test use it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureKekFile } from '../gateway/store/signing-kek.js';

export default function setup(): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'ac-test-run-'));
  process.env.TMPDIR = dir;
  process.env.SIGNING_KEK_FILE = ensureKekFile(join(dir, 'signing-kek'));
  return () => rmSync(dir, { recursive: true, force: true });
}
