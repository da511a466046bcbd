// One temporary directory for the whole test run: every test file's process inherits it as TMPDIR,
// so the config files, Redis data directories and sockets the tests create under os.tmpdir() are
// all removed at the end instead of piling up in /tmp.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'ac-test-run-'));
  process.env.TMPDIR = dir;
  return () => rmSync(dir, { recursive: true, force: true });
}
