// The client is a package: `npm pack` builds a tarball; a scratch app outside the repository
// installs it with `ws` and `@types/ws`, type-checks with strict tsc the Node bot of docs/live.md
// (no cast) and a usage that must not compile (a Slider's value as a string), runs the bot against
// a real gateway, and the package has no runtime dependency and nothing of Node's.
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

/** The fenced block of docs/live.md that starts with `// <name>`. */
function docsExample(name: string): string {
  const blocks = [...readFileSync('docs/live.md', 'utf8').matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
  const block = blocks.find((b) => b.startsWith(`// ${name}`));
  if (!block) throw new Error(`docs/live.md has no ts block starting with // ${name}`);
  return block;
}

/** Runs a command without blocking this process's event loop (the gateway under test is in it). */
const run = async (cmd: string, args: string[], cwd: string, env: Record<string, string> = {}) => (await promisify(execFile)(cmd, args, { cwd, encoding: 'utf8', env: { ...process.env, ...env }, timeout: 120_000 })).stdout;

describe('the client package', () => {
  it('packs, installs into an app outside the repository, type-checks the docs\' Node bot strictly with @types/ws, and runs it against a gateway', async () => {
    const packed = JSON.parse(await run('npm', ['pack', '--json', '--pack-destination', app], join(REPO, 'client'))) as { filename: string; files: { path: string }[] }[];
    const tarball = join(app, packed[0]!.filename);
    expect(packed[0]!.files.map((f) => f.path).sort()).toEqual(
      ['dist/client/live-client.d.ts', 'dist/client/live-client.js', 'dist/client/server-clock.d.ts', 'dist/client/server-clock.js', 'dist/client/socket-like.d.ts', 'dist/client/socket-like.js', 'dist/schemas/light.d.ts', 'dist/schemas/light.js', 'dist/schemas/live-protocol.d.ts', 'dist/schemas/live-protocol.js', 'dist/schemas/live-types.d.ts', 'dist/schemas/live-types.js', 'package.json'].sort(),
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
});
