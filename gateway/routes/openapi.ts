// GET /openapi.json and GET /asyncapi.json: the OpenAPI 3.1 document of the public API and the
// AsyncAPI 3.0 document of the live channel, built once at start from schemas/. They hold nothing
// secret, so any origin may read them (API tools fetch them from their own pages).
import { buildAsyncApiDocument } from '../openapi/asyncapi.js';
import { buildOpenApiDocument } from '../openapi/document.js';
import type { Reply } from '../http/reply.js';
import type { Route } from '../http/route.js';

function documentRoute(pattern: string, doc: object): Route {
  const reply: Reply = {
    status: 200,
    body: null,
    headers: [
      ['access-control-allow-origin', '*'],
      ['cache-control', 'no-cache'],
    ],
    raw: { contentType: 'application/json', data: Buffer.from(JSON.stringify(doc)) },
  };
  return { method: 'get', pattern, handle: () => reply };
}

export function openApiRoute(): Route {
  return documentRoute('/openapi.json', buildOpenApiDocument());
}

export function asyncApiRoute(): Route {
  return documentRoute('/asyncapi.json', buildAsyncApiDocument());
}
