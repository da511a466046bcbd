// Build step: copies the files tsc does not emit (JSON Schemas, the admin page's static files, demo data) into dist/.
import { cpSync, existsSync, mkdirSync, readdirSync } from 'node:fs';

const copies = [
  ['schemas', 'dist/schemas', (f) => f.endsWith('.json')],
  ['gateway/demo', 'dist/gateway/demo', (f) => f.endsWith('.json')],
  ['gateway/store/lua', 'dist/gateway/store/lua', (f) => f.endsWith('.lua')],
  ['gateway/admin/static', 'dist/gateway/admin/static', () => true],
];
for (const [from, to, keep] of copies) {
  if (!existsSync(from)) continue;
  mkdirSync(to, { recursive: true });
  for (const f of readdirSync(from).filter(keep)) cpSync(`${from}/${f}`, `${to}/${f}`);
}
