// `npm run openapi`: writes the OpenAPI document to schemas/openapi.json and the live channel's
// AsyncAPI document to schemas/asyncapi.json, the committed copies that integrators read without
// running a gateway (a test fails when either differs from what is served), and the frames'
// TypeScript types generated from the AsyncAPI document to schemas/live-types.ts.
import { writeFileSync } from 'node:fs';
import { buildAsyncApiDocument } from './asyncapi.js';
import { buildOpenApiDocument } from './document.js';
import { buildLiveTypes, LIVE_TYPES_FILE } from './live-types.js';

for (const [target, doc] of [
  ['schemas/openapi.json', buildOpenApiDocument()],
  ['schemas/asyncapi.json', buildAsyncApiDocument()],
] as const) {
  writeFileSync(target, `${JSON.stringify(doc, null, 2)}\n`);
  console.log(`wrote ${target}`);
}
writeFileSync(LIVE_TYPES_FILE, await buildLiveTypes());
console.log(`wrote ${LIVE_TYPES_FILE}`);
