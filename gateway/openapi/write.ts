// `npm run openapi`: writes the OpenAPI document to schemas/openapi.json, the committed copy that
// integrators read without running a gateway (a test fails when it differs from what is served).
import { writeFileSync } from 'node:fs';
import { buildOpenApiDocument } from './document.js';

const target = process.argv[2] ?? 'schemas/openapi.json';
writeFileSync(target, `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`);
console.log(`wrote ${target}`);
