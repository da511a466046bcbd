// The client is a package: `npm pack` builds a tarball; a scratch app outside the repository
// installs it with `ws` and `@types/ws`, type-checks with strict tsc the Node bot of its README
// (no cast) and a usage that must not compile (a Slider's value as a string), runs the bot against
// a real gateway, and the package has no runtime dependency and nothing of Node's. The same
// tarball loads with `import` and `require` (and through `main`), and type-checks under
// moduleResolution node16 (from an ES module and a CommonJS one) and bundler.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';

const REPO = resolve('.');
const TSC = join(REPO, 'node_modules/typescript/bin/tsc');
const redis = useRedis();
let t: TestGateway;
let app = '';
beforeAll(async () => {
  t = await startTestGateway({ redisUrl: redis.get().server.url });
  app = mkdtempSync(join(tmpdir(), 'ac-client-app-'));
});
afterAll(async () => {
  await t.close();
  rmSync(app, { recursive: true, force: true });
});

/** The fenced block of the client's README that starts with `// <name>`. */
function docsExample(name: string): string {
  const blocks = [...readFileSync('client/README.md', 'utf8').matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
  const block = blocks.find((b) => b.startsWith(`// ${name}`));
  if (!block) throw new Error(`client/README.md has no ts block starting with // ${name}`);
  return block;
}

/** Runs a command without blocking this process's event loop (the gateway under test is in it). */
const run = async (cmd: string, args: string[], cwd: string, env: Record<string, string> = {}) => (await promisify(execFile)(cmd, args, { cwd, encoding: 'utf8', env: { ...process.env, ...env }, timeout: 120_000 })).stdout;

describe('the client package', () => {
  it('packs, installs into an app outside the repository, type-checks the docs\' Node bot strictly with @types/ws, and runs it against a gateway', async () => {
    const packed = JSON.parse(await run('npm', ['pack', '--json', '--pack-destination', app], join(REPO, 'client'))) as { filename: string; files: { path: string }[] }[];
    const tarball = join(app, packed[0]!.filename);
    const files = packed[0]!.files.map((f) => f.path);
    const modules = ['client/live-client', 'client/server-clock', 'client/socket-like', 'schemas/error-codes', 'schemas/light', 'schemas/live-protocol', 'schemas/live-types'];
    expect(files.sort()).toEqual(
      ['LICENSE', 'README.md', 'package.json', 'dist/cjs/package.json', ...modules.flatMap((m) => [`dist/${m}.js`, `dist/${m}.d.ts`, `dist/cjs/${m}.js`, `dist/cjs/${m}.d.ts`])].sort(),
    );
    const manifest = JSON.parse(readFileSync(join(REPO, 'client/package.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest.dependencies).toBeUndefined();

    const lock = JSON.parse(readFileSync(join(REPO, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version: string }> };
    const pinned = (name: string) => `${name}@${lock.packages[`node_modules/${name}`]!.version}`;
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'scratch-app', private: true, type: 'module' }));
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', tarball, pinned('ws'), pinned('@types/ws'), pinned('@types/node')], app);
    writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, esModuleInterop: true, skipLibCheck: false, types: ['node'], outDir: 'out' }, files: ['node-bot.ts', 'typing.ts'] }));
    writeFileSync(join(app, 'node-bot.ts'), docsExample('node-bot.ts'));
    writeFileSync(
      join(app, 'typing.ts'),
      [
        "import { LiveClient, CLOSE, type Action, type CrowdValue } from '@audience-control/client';",
        'export function typing(live: LiveClient): void {',
        "  void live.send({ lid: 1, type: 'Button' });",
        "  void live.send({ lid: 6, type: 'XYPad', value: [0.2, 0.8] });",
        '  // @ts-expect-error a Slider\'s value is a number',
        "  void live.send({ lid: 2, type: 'Slider', value: 'loud' });",
        '  // @ts-expect-error a Toggle\'s value is a boolean',
        "  void live.send({ lid: 3, type: 'Toggle', value: 1 });",
        "  live.on('crowd', (c: CrowdValue) => { const mode: 'mean' | 'median' | 'trimmed-mean' | 'fraction' | 'votes' | 'centroid' | 'rate' = c.mode; void mode; });",
        "  live.on('page', (p) => { for (const c of p.controls) void c.aggregate?.cue?.share; void p.changedAt; });",
        '  const replaced: 4009 = CLOSE.replaced; void replaced;',
        "  const a: Action = { lid: 4, type: 'Index', value: 2 }; void a;",
        '}',
      ].join('\n'),
    );
    await run(process.execPath, [TSC, '-p', 'tsconfig.json'], app);
    const out = await run(process.execPath, ['out/node-bot.js'], app, { GATEWAY_URL: t.url, API_KEY: t.apiKey, LAYOUT_ID: t.layoutId });
    expect(out).toContain('acked on page main');
  }, 180_000);

  it('loads with import, with require and through main, and type-checks under node16 (ESM and CommonJS) and bundler', async () => {
    const installed = join(app, 'node_modules/@audience-control/client');
    expect(readFileSync(join(installed, 'LICENSE'), 'utf8')).toContain('Apache License');
    // the same exports either way, and the CommonJS build is a CommonJS module, not ESM in disguise
    const probe = (kind: string) => `console.log(JSON.stringify({ kind: '${kind}', LiveClient: typeof m.LiveClient, replaced: m.CLOSE.replaced, error: new m.LiveError('rate_limited', 'x').code }))`;
    writeFileSync(join(app, 'esm.mjs'), `import * as m from '@audience-control/client';\n${probe('esm')}\n`);
    writeFileSync(join(app, 'cjs.cjs'), `const m = require('@audience-control/client');\n${probe('cjs')}\n`);
    writeFileSync(join(app, 'main.cjs'), `const { join, dirname } = require('node:path');\nconst dir = dirname(require.resolve('@audience-control/client/package.json'));\nconst m = require(join(dir, require(join(dir, 'package.json')).main));\n${probe('main')}\n`);
    for (const [file, kind] of [['esm.mjs', 'esm'], ['cjs.cjs', 'cjs'], ['main.cjs', 'main']] as const) {
      expect(JSON.parse(await run(process.execPath, [file], app))).toEqual({ kind, LiveClient: 'function', replaced: 4009, error: 'rate_limited' });
    }
    expect(readFileSync(join(installed, 'dist/cjs/client/live-client.js'), 'utf8')).toContain('exports.LiveClient');

    // a typed use: the error codes are a union, not string
    const typed = (from: string) => [
      from,
      'export function typed(live: LiveClient): LiveErrorCode {',
      "  const known: LiveErrorCode = 'rate_limited';",
      "  // @ts-expect-error not an error code of the contract",
      "  const unknown: LiveErrorCode = 'no_such_code';",
      "  void unknown; void live.send({ lid: 2, type: 'Slider', value: 0.5 });",
      '  return new LiveError(known, "x").code;',
      '}',
    ].join('\n');
    const esmImport = "import { LiveClient, LiveError, type LiveErrorCode } from '@audience-control/client';";
    writeFileSync(join(app, 'typed-esm.mts'), typed(esmImport));
    writeFileSync(join(app, 'typed-cjs.cts'), typed(esmImport)); // a .cts import compiles to require: the require condition's types
    writeFileSync(join(app, 'typed-bundler.ts'), typed(esmImport));
    const tsconfig = (name: string, options: Record<string, unknown>, files: string[]) =>
      writeFileSync(join(app, name), JSON.stringify({ compilerOptions: { target: 'ES2022', strict: true, skipLibCheck: false, types: [], lib: ['ES2022', 'DOM'], noEmit: true, ...options }, files }));
    tsconfig('tsconfig.node16.json', { module: 'Node16', moduleResolution: 'Node16' }, ['typed-esm.mts', 'typed-cjs.cts']);
    tsconfig('tsconfig.bundler.json', { module: 'ESNext', moduleResolution: 'Bundler' }, ['typed-bundler.ts']);
    await run(process.execPath, [TSC, '-p', 'tsconfig.node16.json', '--traceResolution'], app).then((trace) => {
      // each module system found its own declarations
      expect(trace).toMatch(/'@audience-control\/client' was successfully resolved to '[^']*\/dist\/client\/live-client\.d\.ts'/);
      expect(trace).toMatch(/'@audience-control\/client' was successfully resolved to '[^']*\/dist\/cjs\/client\/live-client\.d\.ts'/);
    });
    await run(process.execPath, [TSC, '-p', 'tsconfig.bundler.json'], app);
  }, 120_000);
});
