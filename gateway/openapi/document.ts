// The OpenAPI 3.1 document of the public API, built from the JSON Schemas in schemas/ (the ones the
// gateway validates with) and the error table in errors.ts, so it cannot drift from what the
// gateway does. Served at GET /openapi.json and committed as schemas/openapi.json (`npm run openapi`
// writes it; a test keeps the two equal). The examples, each with the request that produces it,
// are in examples.ts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SCHEMA_DIR } from '../../schemas/schema-dir.js';
import { CONTROL_TYPES } from '../../schemas/types.js';
import { ERRORS, type ErrorCode } from '../errors.js';
import { actionExamples, attachExamples, layoutExamples, preflightExamples, tokenExamples, type Json } from './examples.js';


/** Schema files and the component each becomes; api-responses.schema.json gives one per $def. */
const FILE_COMPONENTS: Record<string, string> = {
  'layout-definition.schema.json': 'LayoutDefinition',
  'control.schema.json': 'Control',
  'token-request.schema.json': 'TokenRequest',
};
/**
 * Every shared definition (a file's `$defs`) is a component of its own: nested `$defs` would leak
 * into generated clients as a property (`LayoutDefinition` demanding a `$defs` field).
 */
const DEF_COMPONENTS: Record<string, string> = {
  'layout-definition.schema.json#/$defs/id': 'Id',
  'action-value.schema.json#/$defs/controlType': 'ControlType',
  'control.schema.json#/$defs/cue': 'CrowdCue',
  'light-look.schema.json#/$defs/zone': 'LightZone',
  'light-look.schema.json#/$defs/off': 'LightOff',
  'light-look.schema.json#/$defs/color': 'LightColor',
  'light-look.schema.json#/$defs/brightness': 'LightBrightness',
  'light-look.schema.json#/$defs/fadeMs': 'LightFadeMs',
  'light-look.schema.json#/$defs/pattern': 'LightPattern',
  ...Object.fromEntries(CONTROL_TYPES.map((t) => [`action-value.schema.json#/$defs/${t}`, `${t}Value`])),
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

export const readSchema = (file: string): Json => JSON.parse(readFileSync(join(SCHEMA_DIR, file), 'utf8')) as Json;
const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });

/** A `$ref` of a schema file, rewritten to point at a component of this document. */
function componentRef(target: string, fromFile: string): string {
  const [file = '', pointer = ''] = target.split('#');
  const source = file || fromFile;
  const name = source === RESPONSES_FILE ? RESPONSE_COMPONENTS[pointer.replace('/$defs/', '')] : pointer ? DEF_COMPONENTS[`${source}#${pointer}`] : FILE_COMPONENTS[source];
  if (!name) throw new Error(`no component for ${target} (in ${fromFile})`);
  return `#/components/schemas/${name}`;
}

/**
 * A copy of a schema with its `$schema`, `$id` and `$defs` dropped and every `$ref` pointing at a
 * component. An array of a fixed length (an XYPad's pair) is also said as a tuple (`prefixItems`,
 * JSON Schema 2020-12, which OpenAPI 3.1 uses), so generated clients type it `[number, number]`.
 */
export function rewrite(node: unknown, fromFile: string, top = true): unknown {
  if (Array.isArray(node)) return node.map((n) => rewrite(n, fromFile, false));
  if (typeof node !== 'object' || node === null) return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) {
    if (top && (k === '$schema' || k === '$id' || k === '$defs')) continue;
    out[k] = k === '$ref' && typeof v === 'string' ? componentRef(v, fromFile) : rewrite(v, fromFile, false);
  }
  if (out.type === 'array' && typeof out.minItems === 'number' && out.minItems === out.maxItems && out.minItems <= 4 && typeof out.items === 'object') {
    out.prefixItems = Array.from({ length: out.minItems }, () => out.items);
    out.items = false;
  }
  return out;
}

/**
 * POST /action's body as one schema per control type, told apart by `type` (a discriminator), each
 * with its own `value`: what action-request.schema.json and the value check of the control's type
 * accept together, in a form code generators turn into types (an XYPad value is a pair, a Slider's
 * a number).
 */
function actionSchemas(schemas: Json): void {
  const envelope = readSchema('action-request.schema.json');
  const props = rewrite(envelope.properties, 'action-request.schema.json', false) as Json;
  for (const type of CONTROL_TYPES) {
    schemas[`${type}Action`] = {
      title: `POST /action body for a ${type} control`,
      type: 'object',
      required: ['layoutId', 'lid', 'type', ...(type === 'Button' ? [] : ['value'])],
      additionalProperties: false,
      properties: { layoutId: props.layoutId, lid: props.lid, type: { const: type }, value: ref(`${type}Value`) },
    };
  }
  schemas.ActionRequest = {
    title: envelope.title,
    description: `${String(envelope.description)} One schema per control type, chosen by \`type\`.`,
    oneOf: CONTROL_TYPES.map((t) => ref(`${t}Action`)),
    discriminator: { propertyName: 'type', mapping: Object.fromEntries(CONTROL_TYPES.map((t) => [t, `#/components/schemas/${t}Action`])) },
  };
  schemas.ActionValue = { title: 'An action’s value, by control type', anyOf: CONTROL_TYPES.map((t) => ref(`${t}Value`)) };
}

export function componentSchemas(): Json {
  const schemas: Json = {};
  for (const [target, name] of Object.entries(DEF_COMPONENTS)) {
    const [file = '', pointer = ''] = target.split('#');
    schemas[name] = rewrite((readSchema(file).$defs as Json)[pointer.replace('/$defs/', '')], file, false);
  }
  for (const [file, name] of Object.entries(FILE_COMPONENTS)) schemas[name] = rewrite(readSchema(file), file);
  const defs = readSchema(RESPONSES_FILE).$defs as Json;
  for (const [def, name] of Object.entries(RESPONSE_COMPONENTS)) schemas[name] = rewrite(defs[def], RESPONSES_FILE, false);
  actionSchemas(schemas);
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
      headers: {
        'x-request-id': { $ref: '#/components/headers/RequestId' },
        ...(status === 429 && { 'retry-after': { description: 'Seconds to wait before trying again (at least 1).', schema: { type: 'integer', minimum: 1 } } }),
      },
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

// --- the document ----------------------------------------------------------------------------

function jsonAnswer(description: string, schema: string): Json {
  return { description, headers: { 'x-request-id': { $ref: '#/components/headers/RequestId' } }, content: { 'application/json': { schema: ref(schema) } } };
}

const CORS_HEADERS: Json = {
  'access-control-allow-origin': { description: '`*` by default, or the request’s Origin when it is one of CORS_ORIGINS (then absent for other origins).', schema: { type: 'string' } },
  'access-control-expose-headers': { description: '`x-request-id, retry-after`', schema: { type: 'string' } },
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
    parameters: [{ name: 'layoutId', in: 'path', required: true, schema: ref('Id') }, requestIdParam],
    responses: { '200': jsonAnswer('The active page’s controls.', 'LayoutAnswer'), ...errorResponses(['layout_not_found', ...API_KEY_ERRORS, 'invalid_request', ...ALWAYS]) },
  };
  const postToken: Json = {
    operationId: 'mintToken',
    summary: 'Mint an audience token for a layout',
    description:
      'For the integrator’s backend (API key), which hands the token to the audience’s app. The token is an HS256 JWT: its header is AudienceTokenHeader and its claims AudienceTokenClaims (components). Verification pins HS256 and checks typ, iss, aud and exp. No CORS headers. With `renew` (an earlier token of the layout, expired up to TOKEN_RENEW_GRACE_SECONDS ago at most, 7 days by default) the new token is for the same participant: the same sub and zone, a new iat and exp, so a renewed phone counts once in every crowd value. A renewal answers 401 `token_invalid` for a token whose signature does not verify, `token_expired` past the grace, `token_revoked` for a revoked one, and 400 `token_layout_mismatch` for a token of another layout.',
    tags: ['integrator'],
    security: [{ apiKey: [] }],
    parameters: [requestIdParam],
    requestBody: { required: true, content: { 'application/json': { schema: ref('TokenRequest') } } },
    responses: {
      '200': jsonAnswer('A new audience token.', 'TokenAnswer'),
      ...errorResponses(['layout_not_found', 'zone_not_found', 'token_layout_mismatch', 'token_invalid', 'token_expired', 'token_revoked', 'rate_limited', ...API_KEY_ERRORS, ...BODY_ERRORS, ...ALWAYS], { layout_not_found: 400, token_layout_mismatch: 400 }),
    },
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
          'Optional. A repeat of the same action with the same key (by the same token, for the same layout, within IDEMPOTENCY_TTL_SECONDS, 5 minutes by default, at most twice that) answers the same 200 and appends nothing; the same key with another action answers 409. Retry a 503 with the same key. A header sent empty (or holding only bytes outside ASCII, which the server trims) is 400.',
        schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,64}$' },
      },
    ],
    requestBody: { required: true, content: { 'application/json': { schema: ref('ActionRequest') } } },
    responses: withCors({
      '200': jsonAnswer('The action is in the layout’s stream; with `held: true`, a String of a control in moderation mode `hold` waits for a moderator instead (it plays once approved).', 'ActionAccepted'),
      ...errorResponses(['layout_not_found', 'control_not_found', 'type_mismatch', 'invalid_value', 'moderated', 'idempotency_key_invalid', 'idempotency_key_reused', 'rate_limited', ...TOKEN_ERRORS, ...BODY_ERRORS, ...ALWAYS], { layout_not_found: 400 }),
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
  const asyncapi: Json = {
    operationId: 'getAsyncApi',
    summary: 'The AsyncAPI 3.0 document of the live channel (GET /live, a WebSocket)',
    tags: ['meta'],
    security: [],
    responses: { '200': { description: 'The AsyncAPI 3.0 document of the live channel: its frames, subprotocols and close codes.', content: { 'application/json': { schema: { type: 'object' } } } } },
  };

  /** HEAD of a GET route: the same statuses and headers, no body. */
  const headOf = (get: Json, operationId: string): Json => ({
    operationId,
    summary: `${String(get.summary)}: headers only`,
    description: 'The same status and headers as GET (content-length included), without the body.',
    tags: get.tags,
    security: get.security,
    ...(get.parameters ? { parameters: get.parameters } : {}),
    responses: Object.fromEntries(Object.entries(get.responses as Record<string, Json>).map(([status, r]) => [status, { description: r.description, ...(r.headers ? { headers: r.headers } : {}) }])),
  });

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
      '/layout/{layoutId}': { get: getLayout, head: headOf(getLayout, 'headLayout') },
      '/token': { post: postToken },
      '/action': { post: postAction, options: preflight },
      '/openapi.json': { get: openapi, head: headOf(openapi, 'headOpenApi') },
      '/asyncapi.json': { get: asyncapi, head: headOf(asyncapi, 'headAsyncApi') },
    },
    externalDocs: { description: 'The live channel (GET /live, a WebSocket for the audience app: the live page, crowd values, actions with acks) is described by the AsyncAPI 3.0 document at /asyncapi.json.', url: '/asyncapi.json' },
    components: {
      schemas: componentSchemas(),
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: '`<keyId>.<secret>`, from the team page or `audiencectl key create`. Keep it on your backend.' },
        audienceToken: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'An audience token from POST /token.' },
      },
      responses: {
        NotFound: {
          description: 'Any path that is not a route: 404 `not_found`.',
          headers: { 'x-request-id': { $ref: '#/components/headers/RequestId' } },
          content: { 'application/json': { schema: { allOf: [ref('Error'), { properties: { error: { properties: { code: { const: 'not_found' } } } } }] } } },
        },
        MethodNotAllowed: {
          description: 'A route asked with a method it does not take: 405 `method_not_allowed`, with Allow listing those it takes.',
          headers: {
            'x-request-id': { $ref: '#/components/headers/RequestId' },
            allow: { description: 'The methods the route takes, e.g. `GET, HEAD`.', schema: { type: 'string' } },
          },
          content: { 'application/json': { schema: { allOf: [ref('Error'), { properties: { error: { properties: { code: { const: 'method_not_allowed' } } } } }] } } },
        },
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
