// `npm run openapi`: writes the OpenAPI document to schemas/openapi.json and the live channel's
// AsyncAPI document to schemas/asyncapi.json, the committed copies that integrators read without
// running a gateway (a test fails when either differs from what is served).
import { writeFileSync } from 'node:fs';
import { buildAsyncApiDocument } from './asyncapi.js';
import { buildOpenApiDocument } from './document.js';

for (const [target, doc] of [
  ['schemas/openapi.json', buildOpenApiDocument()],
  ['schemas/asyncapi.json', buildAsyncApiDocument()],
] as const) {
  writeFileSync(target, `${JSON.stringify(doc, null, 2)}\n`);
  console.log(`wrote ${target}`);
}
