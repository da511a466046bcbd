// Build step: copies the files tsc does not emit (JSON Schemas, the validators' generated code, Lua scripts and the show record's shared Lua, the admin and audience pages' static files, the demo layout) into dist/.
// With --clean (run before tsc) it empties dist/ and client/dist/ instead, so no file of a deleted source lingers there.
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';

if (process.argv.includes('--clean')) {
  rmSync('dist', { recursive: true, force: true });
  rmSync('client/dist', { recursive: true, force: true });
  process.exit(0);
}

const copies = [
  ['schemas', 'dist/schemas', (f) => f.endsWith('.json') || f.endsWith('.lua')],
  // the validators' standalone code, written by the build's scripts/write-validators.mjs
  ['schemas/generated', 'dist/schemas/generated', (f) => f.endsWith('.js')],
  ['gateway/store/lua', 'dist/gateway/store/lua', (f) => f.endsWith('.lua')],
  ['gateway/admin/static', 'dist/gateway/admin/static', () => true],
  ['gateway/play/static', 'dist/gateway/play/static', () => true],
];
for (const [from, to, keep] of copies) {
  if (!existsSync(from)) continue;
  mkdirSync(to, { recursive: true });
  for (const f of readdirSync(from).filter(keep)) cpSync(`${from}/${f}`, `${to}/${f}`);
}
