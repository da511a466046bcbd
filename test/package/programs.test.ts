// audience-gateway, audiencectl and audience-bridge are started many times (a restart, each gateway
// worker, every command an operator types): each is built as one file holding its whole module
// graph, so a start links one module of its own, not hundreds (scripts/bundle-programs.mjs).
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI } from '../helpers/cli.js';
import { BRIDGE_BIN } from '../helpers/bridge.js';
import { GATEWAY_BIN } from '../helpers/gateway-process.js';

const RECORDER = fileURLToPath(new URL('../fixtures/record-modules.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'ac-programs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The file: modules the program linked through import, running with `args`, and its exit code. */
function modulesLinked(program: string, args: string[]): Promise<{ code: number; stdout: string; modules: string[] }> {
  const record = join(dir, `${Math.random().toString(36).slice(2)}.txt`);
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', RECORDER, program, ...args], { env: { ...process.env, RECORD_MODULES: record } }, (err, stdout) => {
      const urls = readFileSync(record, 'utf8').split('\n').filter((u) => u.startsWith('file:') && !u.endsWith('/record-modules-hooks.mjs'));
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, modules: [...new Set(urls)] });
    });
  });
}

describe('the programs that are started many times', () => {
  it('audiencectl links its whole program as one module', async () => {
    const r = await modulesLinked(CLI, ['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('audiencectl');
    expect(r.modules).toEqual([pathToFileURL(CLI).href]);
  });

  it('audience-gateway links its whole program as one module, and still reads its own files by path', async () => {
    const r = await modulesLinked(GATEWAY_BIN, ['--version']);
    expect(r.code).toBe(0);
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(r.stdout).toBe(`audience-gateway ${version} (Node ${process.version})\n`);
    expect(r.modules).toEqual([pathToFileURL(GATEWAY_BIN).href]);
  });

  it('audience-bridge links its whole program as one module', async () => {
    const r = await modulesLinked(BRIDGE_BIN, ['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('audience-bridge');
    expect(r.modules).toEqual([pathToFileURL(BRIDGE_BIN).href]);
  });
});
