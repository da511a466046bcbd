// The OpenAPI document: committed, served, valid OpenAPI 3.1 (checked by a maintained validator),
// complete about error codes, and true: every example request, sent to a running gateway, gets
// the documented answer.
import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { describe, expect, it } from 'vitest';
import { ERRORS } from '../../gateway/errors.js';
import { buildOpenApiDocument } from '../../gateway/openapi/document.js';
import { EXAMPLE_API_KEY, EXAMPLE_TOKEN } from '../../gateway/openapi/examples.js';
import { call, mintToken, useGatewayWithToken } from '../helpers/gateway.js';
import { DEMO_LAYOUT_FILE } from '../../schemas/demo-layout.js';
import type { LayoutDefinition } from '../../schemas/types.js';
import { useRedis } from '../helpers/redis.js';

type Json = Record<string, any>;

const COMMITTED = JSON.parse(readFileSync('schemas/openapi.json', 'utf8')) as Json;
const redis = useRedis();
// the examples are the demo's (schemas/demo-layout.json): its gateway serves that layout
const g = useGatewayWithToken(() => redis.get().server.url, { layout: JSON.parse(readFileSync(DEMO_LAYOUT_FILE, 'utf8')) as LayoutDefinition });

/** An Ajv that knows the document, so `#/components/...` refs resolve as they do for a reader. */
function documentAjv(doc: Json): Ajv2020 {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ajv.addSchema({ ...doc, $id: 'openapi.json' });
  return ajv;
}

function refsOf(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) node.forEach((n) => refsOf(n, out));
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') out.push(v);
      else refsOf(v, out);
    }
  }
  return out;
}

function resolvePointer(doc: Json, ref: string): unknown {
  return ref
    .slice(2)
    .split('/')
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<unknown>((node, key) => (node && typeof node === 'object' ? (node as Json)[key] : undefined), doc);
}

const OPERATIONS = ['get', 'post', 'options'] as const;
function* operations(doc: Json): Generator<[string, string, Json]> {
  for (const [path, item] of Object.entries(doc.paths as Json)) for (const m of OPERATIONS) if ((item as Json)[m]) yield [path, m, (item as Json)[m] as Json];
}

describe('the OpenAPI document', () => {
  it('the gateway serves at GET /openapi.json exactly the committed schemas/openapi.json (run `npm run openapi` after changing schemas/)', async () => {
    const served = await call(`${g.t.url}/openapi.json`);
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toBe('application/json');
    expect(served.headers.get('access-control-allow-origin')).toBe('*');
    expect(served.body).toEqual(COMMITTED);
    expect(buildOpenApiDocument()).toEqual(COMMITTED);
  });

  it('is valid OpenAPI 3.1 for @seriousme/openapi-schema-validator, which refuses a broken copy', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(COMMITTED));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    const broken = structuredClone(COMMITTED);
    delete broken.info;
    broken.paths['/token'].post.responses['200'] = { content: {} }; // a response without a description
    expect((await new Validator().validate(broken)).valid).toBe(false);
  });

  it('every $ref resolves inside the document, and every component compiles as JSON Schema 2020-12', () => {
    const refs = [...new Set(refsOf(COMMITTED))];
    expect(refs.length).toBeGreaterThan(10);
    for (const ref of refs) {
      expect(ref, ref).toMatch(/^#\//);
      expect(resolvePointer(COMMITTED, ref), ref).toBeTypeOf('object');
    }
    const ajv = documentAjv(COMMITTED);
    for (const name of Object.keys(COMMITTED.components.schemas as Json)) expect(() => ajv.getSchema(`openapi.json#/components/schemas/${name}`), name).not.toThrow();
  });

  it('names every error code the public routes can answer, at the status the gateway answers it', () => {
    const documented = new Map<string, Set<number>>();
    for (const [, , op] of operations(COMMITTED)) {
      for (const [status, response] of Object.entries(op.responses as Json)) {
        const codes = ((response as Json).content?.['application/json']?.schema?.allOf?.[1]?.properties?.error?.properties?.code?.enum ?? []) as string[];
        for (const c of codes) documented.set(c, new Set([...(documented.get(c) ?? []), Number(status)]));
      }
    }
    const adminAndCli = ['login_failed', 'too_many_attempts', 'session_required', 'csrf_failed', 'admin_exists', 'admin_not_found', 'invalid_argument', 'invalid_layout', 'team_not_found', 'layout_owned_by_other_team', 'page_not_found', 'cue_not_found', 'item_not_found', 'key_not_found', 'signing_key_not_found', 'signing_key_in_use', 'light_canvas_missing'];
    const routing = ['not_found', 'method_not_allowed']; // any path; the document's description names them
    const liveOnly = ['protocol_missing', 'upgrade_invalid', 'token_mismatch']; // the live channel's upgrade and refresh frame: the AsyncAPI document names them
    const publicCodes = Object.keys(ERRORS).filter((c) => !adminAndCli.includes(c) && !routing.includes(c) && !liveOnly.includes(c));
    expect([...documented.keys()].sort()).toEqual(publicCodes.sort());
    for (const [code, statuses] of documented) {
      if (code === 'layout_not_found' || code === 'token_layout_mismatch') expect([...statuses].sort(), code).toEqual(code === 'layout_not_found' ? [400, 404] : [400, 401]);
      else expect([...statuses], code).toEqual([ERRORS[code as keyof typeof ERRORS].status]);
    }
    const info = COMMITTED.info as Json;
    for (const code of routing) expect(info.description).toContain(`\`${code}\``);
  });

  it('the example request bodies of each 200 fit the documented request schema; an out-of-range slider does not', () => {
    const ajv = documentAjv(COMMITTED);
    const check = ajv.getSchema('openapi.json#/components/schemas/ActionRequest')!;
    const examples = COMMITTED.paths['/action'].post.requestBody.content['application/json'].examples as Json;
    for (const name of ['button', 'slider', 'toggle', 'index', 'string', 'xyPad']) expect(check(examples[name].value), name).toBe(true);
    expect(check(examples.sliderOutOfRange.value)).toBe(false);
    expect(check({ layoutId: 'demo-show', lid: 2, type: 'Slider' })).toBe(false); // a Slider needs its value
    expect(check({ layoutId: 'demo-show', lid: 1, type: 'Button' })).toBe(true);
  });

  it('the example token decodes to the documented header and claims', () => {
    const ajv = documentAjv(COMMITTED);
    expect(ajv.validate('openapi.json#/components/schemas/AudienceTokenHeader', decodeProtectedHeader(EXAMPLE_TOKEN)), JSON.stringify(ajv.errors)).toBe(true);
    expect(ajv.validate('openapi.json#/components/schemas/AudienceTokenClaims', decodeJwt(EXAMPLE_TOKEN)), JSON.stringify(ajv.errors)).toBe(true);
  });

  it('every documented example, sent to a running gateway, gets the documented status and answer', async () => {
    const ajv = documentAjv(COMMITTED);
    const token = await mintToken(g.t, g.t.layoutId, g.t.apiKey); // a fresh audience, so the idempotency examples start clean
    const real = (s: string) => s.replaceAll(EXAMPLE_API_KEY, g.t.apiKey).replaceAll(EXAMPLE_TOKEN, token);
    let sent = 0;
    for (const [path, method, op] of operations(COMMITTED)) {
      for (const [status, response] of Object.entries(op.responses as Json)) {
        const examples = { ...((response as Json).content?.['application/json']?.examples as Json), ...((response as Json)['x-examples'] as Json) };
        for (const [name, example] of Object.entries(examples) as [string, Json][]) {
          const request = example['x-request'] as { method: string; path: string; headers: Record<string, string>; body?: string };
          const where = `${method.toUpperCase()} ${path} example ${name}`;
          expect(request.method.toLowerCase(), where).toBe(method);
          const headers = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, real(v)]));
          const r = await fetch(`${g.t.url}${request.path}`, { method: request.method, headers, ...(request.body !== undefined && { body: real(request.body) }) });
          const text = await r.text();
          sent++;
          expect(r.status, `${where}: ${text}`).toBe(Number(status));
          if (Number(status) === 204) continue;
          const body = JSON.parse(text) as Json;
          const schema = `openapi.json#/paths/${path.replaceAll('/', '~1')}/${method}/responses/${status}/content/application~1json/schema`;
          expect(ajv.validate(schema, body), `${where}: ${JSON.stringify(ajv.errors)}`).toBe(true);
          const expected = example.value as Json;
          if (expected.success === false) expect(body.error.code, where).toBe(expected.error.code);
          else if (path === '/token') {
            expect(ajv.validate('openapi.json#/components/schemas/AudienceTokenClaims', decodeJwt(body.token as string)), where).toBe(true);
            expect(decodeJwt(body.token as string).layoutId, where).toBe(decodeJwt(expected.token as string).layoutId);
          } else expect(body, where).toEqual(expected);
        }
      }
    }
    expect(sent).toBeGreaterThanOrEqual(28);
  });
});
