// The OpenAPI 3.1 document of the public API, built from the JSON Schemas in schemas/ (the ones the
// gateway validates with) and the error table in errors.ts, so it cannot drift from what the
// gateway does. Served at GET /openapi.json and committed as schemas/openapi.json (`npm run openapi`
// writes it; a test keeps the two equal). Every example carries the request that produces it
// (`x-request`); a test sends each one to a running gateway and checks the answer.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SCHEMA_DIR } from '../../schemas/validators.js';
import { CONTROL_TYPES } from '../../schemas/types.js';
import { ERRORS, type ErrorCode } from '../errors.js';

type Json = Record<string, unknown>;

/** Schema files and the component each becomes; api-responses.schema.json gives one per $def. */
const FILE_COMPONENTS: Record<string, string> = {
  'layout-definition.schema.json': 'LayoutDefinition',
  'control.schema.json': 'Control',
  'action-value.schema.json': 'ActionValue',
  'token-request.schema.json': 'TokenRequest',
  'action-request.schema.json': 'ActionRequest',
};
const RESPONSES_FILE = 'api-responses.schema.json';
const RESPONSE_COMPONENTS: Record<string, string> = {
  layout: 'LayoutAnswer',
  token: 'TokenAnswer',
  accepted: 'ActionAccepted',
  error: 'Error',
  audienceTokenHeader: 'AudienceTokenHeader',
  audienceTokenClaims: 'AudienceTokenClaims',
};

const readSchema = (file: string): Json => JSON.parse(readFileSync(join(SCHEMA_DIR, file), 'utf8')) as Json;
const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });

/** A `$ref` of a schema file, rewritten to point inside this document's components. */
function componentRef(target: string, fromFile: string): string {
  const [file = '', pointer = ''] = target.split('#');
  const source = file || fromFile;
  if (source === RESPONSES_FILE) {
    const name = RESPONSE_COMPONENTS[pointer.replace('/$defs/', '')];
    if (!name) throw new Error(`no component for ${target}`);
    return `#/components/schemas/${name}`;
  }
  const name = FILE_COMPONENTS[source];
  if (!name) throw new Error(`no component for the schema file ${source}`);
  return `#/components/schemas/${name}${pointer}`;
}

/** A copy of a schema with its `$schema`/`$id` dropped and every `$ref` pointing into components. */
function rewrite(node: unknown, fromFile: string, top = true): unknown {
  if (Array.isArray(node)) return node.map((n) => rewrite(n, fromFile, false));
  if (typeof node !== 'object' || node === null) return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) {
    if (top && (k === '$schema' || k === '$id')) continue;
    out[k] = k === '$ref' && typeof v === 'string' ? componentRef(v, fromFile) : rewrite(v, fromFile, false);
  }
  return out;
}

function componentSchemas(): Json {
  const schemas: Json = {};
  for (const [file, name] of Object.entries(FILE_COMPONENTS)) schemas[name] = rewrite(readSchema(file), file);
  const defs = readSchema(RESPONSES_FILE).$defs as Json;
  for (const [def, name] of Object.entries(RESPONSE_COMPONENTS)) schemas[name] = rewrite(defs[def], RESPONSES_FILE, false);
  // The action's value, by control type: the same $defs the gateway checks each value with.
  const action = schemas.ActionRequest as Json;
  action.allOf = CONTROL_TYPES.map((type) => ({
    if: { properties: { type: { const: type } }, required: ['type'] },
    then: { properties: { value: ref(`ActionValue/$defs/${type}`) }, ...(type !== 'Button' && { required: ['value'] }) },
  }));
  return schemas;
}

// --- errors ----------------------------------------------------------------------------------

/** The status a code answers on a route: the table's, except where the spec fixes another. */
function statusOf(code: ErrorCode, overrides: Partial<Record<ErrorCode, number>>): number {
  return overrides[code] ?? ERRORS[code].status;
}

/** One response per status, its body an Error whose code is one of those the route can answer. */
function errorResponses(codes: readonly ErrorCode[], overrides: Partial<Record<ErrorCode, number>> = {}): Record<string, Json> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(statusOf(code, overrides), [...(byStatus.get(statusOf(code, overrides)) ?? []), code]);
  const out: Record<string, Json> = {};
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    out[String(status)] = {
      description: list.map((c) => `\`${c}\`: ${ERRORS[c].message}`).join(' '),
      headers: { 'x-request-id': { $ref: '#/components/headers/RequestId' } },
      content: {
        'application/json': {
          schema: { allOf: [ref('Error'), { properties: { error: { properties: { code: { enum: list } } } } }] },
        },
      },
    };
  }
  return out;
}

const BODY_ERRORS: readonly ErrorCode[] = ['invalid_request', 'invalid_json', 'invalid_body', 'unsupported_media_type', 'body_too_large'];
const API_KEY_ERRORS: readonly ErrorCode[] = ['api_key_missing', 'api_key_invalid', 'api_key_revoked'];
const TOKEN_ERRORS: readonly ErrorCode[] = ['token_missing', 'token_invalid', 'token_expired', 'token_revoked', 'token_layout_mismatch'];
const ALWAYS: readonly ErrorCode[] = ['internal', 'unavailable'];

// --- examples --------------------------------------------------------------------------------

/** Placeholders in the examples: an API key as the team page shows it, and an audience token. */
export const EXAMPLE_API_KEY = 'ak_0123456789abcdef.EXAMPLE-secret-shown-once-by-the-team-page00';
const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
export const EXAMPLE_CLAIMS = {
  iss: 'audience-control',
  aud: 'audience-control/action',
  sub: 'aud_Q2xpZW50LWV4YW1w',
  layoutId: 'demo-show',
  team: 'team_0123456789ab',
  keyId: 'ak_0123456789abcdef',
  iat: 1795363200,
  exp: 1795449600,
};
export const EXAMPLE_TOKEN = `${b64({ alg: 'HS256', typ: 'audience+jwt', kid: 'sk_0123456789ab' })}.${b64(EXAMPLE_CLAIMS)}.EXAMPLE-signature-of-the-gateway-000000000`;

interface ExampleRequest {
  method: 'GET' | 'POST' | 'OPTIONS';
  path: string;
  headers: Record<string, string>;
  /** the body as sent, byte for byte (so a broken one can be shown) */
  body?: string;
}

interface Example {
  name: string;
  summary: string;
  request: ExampleRequest;
  status: number;
  /** the answer's body; for 204, none */
  answer?: unknown;
}

const json = { 'content-type': 'application/json' };
const withKey = { 'x-api-key': EXAMPLE_API_KEY };
const withToken = { authorization: `Bearer ${EXAMPLE_TOKEN}` };
const fail = (code: ErrorCode) => ({ success: false, error: { code, message: ERRORS[code].message } });

function demoLayout(): Json {
  const demo = JSON.parse(readFileSync(new URL('../demo/demo-layout.json', import.meta.url), 'utf8')) as { activePageId: string; pages: { pageId: string; controls: unknown[] }[] };
  const page = demo.pages.find((p) => p.pageId === demo.activePageId)!;
  return { layoutId: 'demo-show', activePageId: demo.activePageId, controls: page.controls, destinationCount: 0 };
}

function action(body: unknown, extra: Record<string, string> = {}): ExampleRequest {
  return { method: 'POST', path: '/action', headers: { ...json, ...withToken, ...extra }, body: JSON.stringify(body) };
}

function layoutExamples(): Example[] {
  const get = (headers: Record<string, string>, id = 'demo-show'): ExampleRequest => ({ method: 'GET', path: `/layout/${id}`, headers });
  return [
    { name: 'demo', summary: 'The demo layout that `npm start` seeds, with no bridge running', request: get(withKey), status: 200, answer: demoLayout() },
    { name: 'noKey', summary: 'No x-api-key header', request: get({}), status: 401, answer: fail('api_key_missing') },
    { name: 'wrongKey', summary: 'A key that is not one of yours', request: get({ 'x-api-key': 'ak_ffffffffffffffff.not-a-real-secret-not-a-real-secret-not-a-r' }), status: 401, answer: fail('api_key_invalid') },
    { name: 'unknownLayout', summary: 'A layout that does not exist, or is outside the key’s scope', request: get(withKey, 'no-such-layout'), status: 404, answer: fail('layout_not_found') },
  ];
}

function tokenExamples(): Example[] {
  const post = (body: string, headers: Record<string, string> = { ...json, ...withKey }): ExampleRequest => ({ method: 'POST', path: '/token', headers, body });
  return [
    {
      name: 'demo',
      summary: 'A token for the demo layout (the token and expiresAt differ every time)',
      request: post('{"layoutId":"demo-show"}'),
      status: 200,
      answer: { token: EXAMPLE_TOKEN, expiresAt: new Date(EXAMPLE_CLAIMS.exp * 1000).toISOString() },
    },
    { name: 'unknownLayout', summary: 'A layout that does not exist, or is outside the key’s scope (400, as the spec fixes)', request: post('{"layoutId":"no-such-layout"}'), status: 400, answer: fail('layout_not_found') },
    { name: 'missingLayoutId', summary: 'A body without layoutId', request: post('{}'), status: 400, answer: fail('invalid_body') },
    { name: 'brokenJson', summary: 'A body that is not JSON', request: post('{"layoutId": "demo-show"'), status: 400, answer: fail('invalid_json') },
    { name: 'notJson', summary: 'A body sent as a form', request: post('layoutId=demo-show', { ...withKey, 'content-type': 'application/x-www-form-urlencoded' }), status: 415, answer: fail('unsupported_media_type') },
    { name: 'noKey', summary: 'No x-api-key header', request: post('{"layoutId":"demo-show"}', json), status: 401, answer: fail('api_key_missing') },
  ];
}

function actionExamples(): Example[] {
  const ok = { success: true };
  return [
    { name: 'button', summary: 'Press the Fireworks button (no value)', request: action({ layoutId: 'demo-show', lid: 1, type: 'Button' }), status: 200, answer: ok },
    { name: 'slider', summary: 'Move the Brightness slider', request: action({ layoutId: 'demo-show', lid: 2, type: 'Slider', value: 0.75 }), status: 200, answer: ok },
    { name: 'toggle', summary: 'Switch the strobe on', request: action({ layoutId: 'demo-show', lid: 3, type: 'Toggle', value: true }), status: 200, answer: ok },
    { name: 'index', summary: 'Choose Blue (option 2)', request: action({ layoutId: 'demo-show', lid: 4, type: 'Index', value: 2 }), status: 200, answer: ok },
    { name: 'string', summary: 'A shout-out', request: action({ layoutId: 'demo-show', lid: 5, type: 'String', value: 'Hello from row 12 👋' }), status: 200, answer: ok },
    { name: 'xyPad', summary: 'Point the spotlight', request: action({ layoutId: 'demo-show', lid: 6, type: 'XYPad', value: [0.25, 0.8] }), status: 200, answer: ok },
    {
      name: 'withIdempotencyKey',
      summary: 'An action with an Idempotency-Key: sent again with the same key, it answers 200 and is played once',
      request: action({ layoutId: 'demo-show', lid: 2, type: 'Slider', value: 0.5 }, { 'idempotency-key': 'phone-42.action-7' }),
      status: 200,
      answer: ok,
    },
    {
      name: 'idempotencyKeyReused',
      summary: 'The key of the example above, with another action',
      request: action({ layoutId: 'demo-show', lid: 2, type: 'Slider', value: 0.9 }, { 'idempotency-key': 'phone-42.action-7' }),
      status: 409,
      answer: fail('idempotency_key_reused'),
    },
    { name: 'badIdempotencyKey', summary: 'An Idempotency-Key with a space in it', request: action({ layoutId: 'demo-show', lid: 1, type: 'Button' }, { 'idempotency-key': 'not allowed' }), status: 400, answer: fail('idempotency_key_invalid') },
    { name: 'sliderOutOfRange', summary: 'A slider value above 1', request: action({ layoutId: 'demo-show', lid: 2, type: 'Slider', value: 1.5 }), status: 400, answer: fail('invalid_value') },
    { name: 'unknownOption', summary: 'An option the Colour control does not have', request: action({ layoutId: 'demo-show', lid: 4, type: 'Index', value: 7 }), status: 400, answer: fail('invalid_value') },
    { name: 'wrongType', summary: 'A Toggle action for the Brightness slider', request: action({ layoutId: 'demo-show', lid: 2, type: 'Toggle', value: true }), status: 400, answer: fail('type_mismatch') },
    { name: 'notOnActivePage', summary: 'Confetti (lid 7) is on the Encore page, which is not live', request: action({ layoutId: 'demo-show', lid: 7, type: 'Button' }), status: 400, answer: fail('control_not_found') },
    { name: 'extraField', summary: 'A field the body does not have', request: action({ layoutId: 'demo-show', lid: 1, type: 'Button', colour: 'red' }), status: 400, answer: fail('invalid_body') },
    { name: 'otherLayout', summary: 'A token minted for demo-show, used for another layout', request: action({ layoutId: 'another-show', lid: 1, type: 'Button' }), status: 401, answer: fail('token_layout_mismatch') },
    { name: 'noToken', summary: 'No Authorization header', request: { ...action({ layoutId: 'demo-show', lid: 1, type: 'Button' }), headers: json }, status: 401, answer: fail('token_missing') },
    {
      name: 'forgedToken',
      summary: 'A token that was not signed by this gateway',
      request: { ...action({ layoutId: 'demo-show', lid: 1, type: 'Button' }), headers: { ...json, authorization: `Bearer ${EXAMPLE_TOKEN}x` } },
      status: 401,
      answer: fail('token_invalid'),
    },
  ];
}

function preflightExamples(): Example[] {
  return [
    {
      name: 'preflight',
      summary: 'A browser’s preflight from an audience web app',
      request: { method: 'OPTIONS', path: '/action', headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' } },
      status: 204,
    },
  ];
}

/** The examples of one operation, as OpenAPI puts them: request bodies, and answers by status. */
function attachExamples(operation: Json, examples: Example[]): void {
  const responses = operation.responses as Record<string, Json>;
  const bodies: Record<string, Json> = {};
  for (const e of examples) {
    if (e.request.body !== undefined && e.request.headers['content-type'] === 'application/json') {
      try {
        bodies[e.name] = { summary: e.summary, value: JSON.parse(e.request.body) };
      } catch {
        bodies[e.name] = { summary: e.summary, value: e.request.body };
      }
    }
    const response = responses[String(e.status)];
    if (!response) throw new Error(`example ${e.name}: no ${e.status} response documented`);
    const example = { summary: e.summary, 'x-request': e.request, ...(e.answer !== undefined && { value: e.answer }) };
    if (e.answer === undefined) {
      response['x-examples'] = { ...(response['x-examples'] as Json | undefined), [e.name]: example };
    } else {
      const media = (response.content as Record<string, Json>)['application/json']!;
      media.examples = { ...(media.examples as Json | undefined), [e.name]: example };
    }
  }
  const requestBody = operation.requestBody as { content: Record<string, Json> } | undefined;
  if (requestBody && Object.keys(bodies).length > 0) requestBody.content['application/json']!.examples = bodies;
}

// --- the document ----------------------------------------------------------------------------

function jsonAnswer(description: string, schema: string): Json {
  return { description, headers: { 'x-request-id': { $ref: '#/components/headers/RequestId' } }, content: { 'application/json': { schema: ref(schema) } } };
}

const CORS_HEADERS: Json = {
  'access-control-allow-origin': { description: '`*` by default, or the request’s Origin when it is one of CORS_ORIGINS (then absent for other origins).', schema: { type: 'string' } },
  'access-control-expose-headers': { description: '`x-request-id`', schema: { type: 'string' } },
};

function withCors(responses: Record<string, Json>): Record<string, Json> {
  for (const r of Object.values(responses)) r.headers = { ...(r.headers as Json), ...CORS_HEADERS };
  return responses;
}

export function buildOpenApiDocument(): Json {
  const requestIdParam = { $ref: '#/components/parameters/RequestId' };
  const getLayout: Json = {
    operationId: 'getLayout',
    summary: 'The controls on a layout’s active page',
    description: 'For the integrator’s backend (API key). A layout that does not exist and one outside the key’s scope answer the same 404. HEAD answers the same status and headers without the body. No CORS headers: the API key must never reach a browser.',
    tags: ['integrator'],
    security: [{ apiKey: [] }],
    parameters: [{ name: 'layoutId', in: 'path', required: true, schema: ref('LayoutDefinition/$defs/id') }, requestIdParam],
    responses: { '200': jsonAnswer('The active page’s controls.', 'LayoutAnswer'), ...errorResponses(['layout_not_found', ...API_KEY_ERRORS, 'invalid_request', ...ALWAYS]) },
  };
  const postToken: Json = {
    operationId: 'mintToken',
    summary: 'Mint an audience token for a layout',
    description:
      'For the integrator’s backend (API key), which hands the token to the audience’s app. The token is an HS256 JWT: its header is AudienceTokenHeader and its claims AudienceTokenClaims (components). Verification pins HS256 and checks typ, iss, aud and exp. No CORS headers.',
    tags: ['integrator'],
    security: [{ apiKey: [] }],
    parameters: [requestIdParam],
    requestBody: { required: true, content: { 'application/json': { schema: ref('TokenRequest') } } },
    responses: { '200': jsonAnswer('A new audience token.', 'TokenAnswer'), ...errorResponses(['layout_not_found', ...API_KEY_ERRORS, ...BODY_ERRORS, ...ALWAYS], { layout_not_found: 400 }) },
  };
  const postAction: Json = {
    operationId: 'sendAction',
    summary: 'Send one control action',
    description:
      'For the audience’s app (Bearer audience token). Answers 200 once the action is in the layout’s stream. The control must be on the layout’s active page, of the same type, and the value must fit it (ActionValue, by type; an Index value must also be one of the control’s options). Callable from any web origin unless CORS_ORIGINS narrows it.',
    tags: ['audience'],
    security: [{ audienceToken: [] }],
    parameters: [
      requestIdParam,
      {
        name: 'Idempotency-Key',
        in: 'header',
        required: false,
        description:
          'Optional. A repeat of the same action with the same key (by the same token, for the same layout, within IDEMPOTENCY_TTL_SECONDS, 24 h by default) answers the same 200 and appends nothing; the same key with another action answers 409. Retry a 503 with the same key. An empty header counts as absent.',
        schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,64}$' },
      },
    ],
    requestBody: { required: true, content: { 'application/json': { schema: ref('ActionRequest') } } },
    responses: withCors({
      '200': jsonAnswer('The action is in the layout’s stream.', 'ActionAccepted'),
      ...errorResponses(['layout_not_found', 'control_not_found', 'type_mismatch', 'invalid_value', 'idempotency_key_invalid', 'idempotency_key_reused', ...TOKEN_ERRORS, ...BODY_ERRORS, ...ALWAYS], { layout_not_found: 400 }),
    }),
  };
  const preflight: Json = {
    operationId: 'preflightAction',
    summary: 'CORS preflight for POST /action',
    tags: ['audience'],
    security: [],
    parameters: [{ name: 'Origin', in: 'header', required: false, schema: { type: 'string' } }],
    responses: withCors({
      '204': {
        description: 'Allowed.',
        headers: {
          'access-control-allow-methods': { description: '`POST, OPTIONS`', schema: { type: 'string' } },
          'access-control-allow-headers': { description: '`authorization, content-type, x-request-id, idempotency-key`', schema: { type: 'string' } },
          'access-control-max-age': { description: '`600`', schema: { type: 'string' } },
        },
      },
      ...errorResponses(['origin_not_allowed']),
    }),
  };
  const openapi: Json = {
    operationId: 'getOpenApi',
    summary: 'This document',
    tags: ['meta'],
    security: [],
    responses: { '200': { description: 'The OpenAPI 3.1 document of this API.', content: { 'application/json': { schema: { type: 'object' } } } } },
  };

  attachExamples(getLayout, layoutExamples());
  attachExamples(postToken, tokenExamples());
  attachExamples(postAction, actionExamples());
  attachExamples(preflight, preflightExamples());

  return {
    openapi: '3.1.0',
    info: {
      title: 'audience-control gateway',
      version: '1.0.0',
      summary: 'Let an audience steer what is on the screens at a live event.',
      description:
        'An integrator’s backend discovers the controls on a layout’s active page (GET /layout) and mints an audience token for it (POST /token) with its API key; the audience’s app sends control actions with that token (POST /action). Every answer carries x-request-id. Every error body is Error; switch on error.code (the message may change). Any route answers 404 `not_found` when it does not exist and 405 `method_not_allowed` (with Allow) for a method it does not take.',
    },
    tags: [
      { name: 'integrator', description: 'Called by the integrator’s backend with an API key.' },
      { name: 'audience', description: 'Called by the audience’s app with an audience token.' },
      { name: 'meta', description: 'About the API itself.' },
    ],
    paths: {
      '/layout/{layoutId}': { get: getLayout },
      '/token': { post: postToken },
      '/action': { post: postAction, options: preflight },
      '/openapi.json': { get: openapi },
    },
    components: {
      schemas: componentSchemas(),
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: '`<keyId>.<secret>`, from the team page or `audiencectl key create`. Keep it on your backend.' },
        audienceToken: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'An audience token from POST /token.' },
      },
      parameters: {
        RequestId: {
          name: 'x-request-id',
          in: 'header',
          required: false,
          description: 'Your own request id, echoed back; otherwise the gateway makes one.',
          schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,64}$' },
        },
      },
      headers: {
        RequestId: { description: 'The request’s id: yours when you sent a well-formed one, else a generated one.', schema: { type: 'string' } },
      },
    },
  };
}
