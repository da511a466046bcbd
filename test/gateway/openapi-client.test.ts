// What an integrator does first: generate a typed client from the committed OpenAPI document. Types
// made by openapi-typescript from schemas/openapi.json must type-check a small openapi-fetch client,
// refuse what the gateway refuses (a Slider with a string value, an XYPad with one number), carry no
// `$defs` artefacts, and the client must then work against a real gateway.
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { useGatewayWithToken } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DIR = fileURLToPath(new URL('../fixtures/openapi-client/', import.meta.url));
const run = promisify(execFile);
const redis = useRedis();
const g = useGatewayWithToken(() => redis.get().server.url);

describe('a client generated from schemas/openapi.json', () => {
  it('type-checks with openapi-typescript + openapi-fetch, refuses wrong values, and works against the gateway', async () => {
    await run(process.execPath, [`${ROOT}node_modules/openapi-typescript/bin/cli.js`, `${ROOT}schemas/openapi.json`, '-o', `${DIR}api.d.ts`], { cwd: ROOT });
    const types = readFileSync(`${DIR}api.d.ts`, 'utf8');
    // no definition nested in a component (openapi-typescript's own empty `export type $defs` is not one)
    expect(types).not.toMatch(/\["\$defs"\]|\$defs: \{/);
    writeFileSync(
      `${DIR}tsconfig.json`,
      JSON.stringify({ compilerOptions: { strict: true, noEmit: true, target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', skipLibCheck: true, types: [], lib: ['ES2022', 'DOM'] }, files: ['client.ts', 'api.d.ts'] }),
    );
    const checked = await run(process.execPath, [`${ROOT}node_modules/typescript/bin/tsc`, '-p', `${DIR}tsconfig.json`], { cwd: ROOT }).then(
      () => '',
      (e: { stdout?: string; message?: string }) => e.stdout ?? e.message ?? 'tsc failed',
    );
    expect(checked).toBe('');
    // imported by a path in a variable, so the project's typecheck does not follow it into a folder whose types the test makes
    const client = '../fixtures/openapi-client/client.ts';
    const { integrate } = (await import(client)) as { integrate: (url: string, apiKey: string, layoutId: string) => Promise<string[]> };
    expect(await integrate(g.t.url, g.t.apiKey, g.t.layoutId)).toEqual([
      'controls 6',
      'Button true',
      'Slider true',
      'Toggle true',
      'Index true',
      'String true',
      'XYPad true',
      'refused 400 control_not_found',
    ]);
  }, 60_000);

  it('would fail to type-check if the negative cases were accepted (the check is not vacuous)', async () => {
    const client = readFileSync(`${DIR}client.ts`, 'utf8').replace("type: 'Slider', value: 'loud'", "type: 'Slider', value: 0.9");
    writeFileSync(`${DIR}client-accepting.ts`, client);
    writeFileSync(`${DIR}tsconfig.accepting.json`, JSON.stringify({ extends: './tsconfig.json', files: ['client-accepting.ts', 'api.d.ts'] }));
    const out = await run(process.execPath, [`${ROOT}node_modules/typescript/bin/tsc`, '-p', `${DIR}tsconfig.accepting.json`], { cwd: ROOT }).then(
      () => '',
      (e: { stdout?: string; message?: string }) => e.stdout ?? e.message ?? 'tsc failed',
    );
    expect(out).toMatch(/Unused '@ts-expect-error' directive/);
  }, 60_000);
});
