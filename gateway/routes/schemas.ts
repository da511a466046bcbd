// GET /schemas/<file>: the contract's JSON Schemas as the gateway checks with them, for editors and
// tools: every schemas/*.schema.json, and /schemas/layout.json, the layout definition's, for a
// `$schema` line in a layout file (its relative $refs resolve beside it). Also the live channel's
// protocol and light modules at /schemas/live-protocol.js and /schemas/light.js, where the client package's relative imports lead.
// Nothing secret: any origin may read them.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { SCHEMA_DIR } from '../../schemas/schema-dir.js';
import { AppError } from '../errors.js';
import { errorReply, type Reply } from '../http/reply.js';
import type { Route } from '../http/route.js';

/** The layout definition's schema, under the short name a `$schema` line uses. */
export const LAYOUT_SCHEMA_PATH = '/schemas/layout.json';

function schemaReply(file: string): Reply {
  return {
    status: 200,
    body: null,
    headers: [
      ['access-control-allow-origin', '*'],
      ['cache-control', 'no-cache'],
    ],
    raw: { contentType: 'application/schema+json', data: readFileSync(join(SCHEMA_DIR, file)) },
  };
}

export function schemaRoutes(clientModules: ReadonlyMap<string, Reply>): Route {
  const files = new Map<string, Reply>(readdirSync(SCHEMA_DIR).filter((f) => f.endsWith('.schema.json')).map((f) => [f, schemaReply(f)]));
  files.set('layout.json', schemaReply('layout-definition.schema.json'));
  for (const [f, reply] of clientModules) files.set(f, reply);
  return { method: 'get', pattern: '/schemas/:file', params: 1, handle: (head) => files.get(head.params[0] ?? '') ?? errorReply(new AppError('not_found')) };
}
