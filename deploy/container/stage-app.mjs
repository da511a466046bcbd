// The file steps of deploy/Containerfile, in Node so that a base image needs no shell tools:
//   stage-app.mjs DIST APP                   the built programs from DIST into APP: dist/ without
//                                            source maps, a package.json, and APP/bin with the commands
//   stage-app.mjs --prune-dependencies DIR   in node_modules DIR: only this platform's uWebSockets.js
//                                            binary, and no link to the repository's client workspace
//   stage-app.mjs --remove-package-managers  npm, npx, corepack and yarn out of the base image, and
//                                            this script with them
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// command -> its program under dist/
const COMMANDS = {
  'audience-gateway': 'gateway/main.js',
  audiencectl: 'gateway/cli/main.js',
  'audience-bridge': 'bridge/main.js',
  'audience-osc-monitor': 'bridge/monitor.js',
  'audience-loadtest': 'loadtest/main.js',
};
// what the commands load: everything under these folders of dist/
const SHIPPED = ['gateway', 'bridge', 'runtime', 'schemas', 'loadtest'];

const [mode, a] = process.argv.slice(2);
if (mode === '--prune-dependencies') pruneDependencies(a);
else if (mode === '--remove-package-managers') removePackageManagers();
else if (mode && a && !mode.startsWith('--')) stage(mode, a);
else {
  console.error('usage: stage-app.mjs DIST APP | --prune-dependencies NODE_MODULES | --remove-package-managers');
  process.exit(2);
}

function stage(dist, app) {
  for (const dir of SHIPPED) {
    cpSync(join(dist, dir), join(app, 'dist', dir), { recursive: true, filter: (f) => !f.endsWith('.map') });
  }
  const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
  writeFileSync(join(app, 'package.json'), `${JSON.stringify({ name: pkg.name, version: pkg.version, private: true, type: 'module', bin: COMMANDS }, null, 2)}\n`);
  mkdirSync(join(app, 'bin'), { recursive: true });
  for (const [command, program] of Object.entries(COMMANDS)) {
    chmodSync(join(app, 'dist', program), 0o755);
    symlinkSync(`../dist/${program}`, join(app, 'bin', command));
  }
}

function pruneDependencies(modules) {
  const uws = join(modules, 'uWebSockets.js');
  const keep = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
  if (!existsSync(join(uws, keep))) throw new Error(`uWebSockets.js has no ${keep} for Node ${process.version}: use a base image with Node 20 or 22`);
  for (const f of readdirSync(uws)) if (/^uws_.*\.node$/.test(f) && f !== keep) rmSync(join(uws, f));
  rmSync(join(modules, '@audience-control'), { recursive: true, force: true });
}

function removePackageManagers() {
  const bin = dirname(process.execPath);
  rmSync(resolve(bin, '../lib/node_modules'), { recursive: true, force: true });
  for (const dir of new Set([bin, '/usr/local/bin', '/usr/bin'])) {
    for (const name of ['npm', 'npx', 'corepack', 'yarn', 'yarnpkg']) rmSync(join(dir, name), { force: true });
  }
  if (existsSync('/opt')) for (const d of readdirSync('/opt')) if (d.startsWith('yarn')) rmSync(join('/opt', d), { recursive: true, force: true });
  rmSync(fileURLToPath(import.meta.url));
}
