// GET /openapi.json: the OpenAPI 3.1 document of the public API, built once at start from schemas/.
// It holds nothing secret, so any origin may read it (API tools fetch it from their own pages).
import { buildOpenApiDocument } from '../openapi/document.js';
import type { Reply } from '../http/reply.js';
import type { Route } from '../http/route.js';

export function openApiRoute(): Route {
  const reply: Reply = {
    status: 200,
    body: null,
    headers: [
      ['access-control-allow-origin', '*'],
      ['cache-control', 'no-cache'],
    ],
    raw: { contentType: 'application/json', data: Buffer.from(JSON.stringify(buildOpenApiDocument())) },
  };
  return { method: 'get', pattern: '/openapi.json', handle: () => reply };
}
