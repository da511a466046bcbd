// Build step (after tsc and the first copy of the assets): writes the schemas' standalone validators
// to schemas/generated/, the code beside the committed type declarations (a test fails when either
// differs from what ajv makes of the schemas now). The second copy of the assets takes the code to dist/.
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildValidatorModules, GENERATED_DIR } from '../dist/schemas/standalone.js';

mkdirSync(GENERATED_DIR, { recursive: true });
const modules = buildValidatorModules();
for (const f of readdirSync(GENERATED_DIR)) if (!modules.has(f)) rmSync(join(GENERATED_DIR, f));
for (const [file, text] of modules) writeFileSync(join(GENERATED_DIR, file), text);
