// The client's two builds, with node alone (the container's build stage has no shell tools): ESM
// in dist/, CommonJS in dist/cjs/, which its own package.json marks as CommonJS.
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
rmSync(here('dist'), { recursive: true, force: true });
for (const config of ['tsconfig.json', 'tsconfig.cjs.json']) execFileSync(process.execPath, [tsc, '-p', here(config)], { stdio: 'inherit' });
writeFileSync(here('dist/cjs/package.json'), '{ "type": "commonjs" }\n');
