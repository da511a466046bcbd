// The OpenAPI document's examples: each carries the request that produces it (`x-request`), on the
// demo layout that `npm start` seeds, with a placeholder API key and audience token; a test sends
// each one to a running gateway and checks the documented answer.
import { readFileSync } from 'node:fs';
import { routeKey } from '../auth/token-claims.js';
import { DEMO_LAYOUT_FILE } from '../../schemas/demo-layout.js';
import { ERRORS, type ErrorCode } from '../errors.js';

export type Json = Record<string, unknown>;


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
  mintedAt: 1795363200123,
};
export const EXAMPLE_TOKEN = `${b64({ route: routeKey(EXAMPLE_CLAIMS.sub), alg: 'HS256', typ: 'audience+jwt', kid: 'sk_0123456789ab' })}.${b64(EXAMPLE_CLAIMS)}.EXAMPLE-signature-of-the-gateway-000000000`;

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
  const demo = JSON.parse(readFileSync(DEMO_LAYOUT_FILE, 'utf8')) as { activePageId: string; zones?: string[]; pages: { pageId: string; controls: unknown[] }[] };
  const page = demo.pages.find((p) => p.pageId === demo.activePageId)!;
  return { layoutId: 'demo-show', activePageId: demo.activePageId, controls: page.controls, destinationCount: 0, ...(demo.zones && demo.zones.length > 0 && { zones: demo.zones }) };
}

function action(body: unknown, extra: Record<string, string> = {}): ExampleRequest {
  return { method: 'POST', path: '/action', headers: { ...json, ...withToken, ...extra }, body: JSON.stringify(body) };
}

export function layoutExamples(): Example[] {
  const get = (headers: Record<string, string>, id = 'demo-show'): ExampleRequest => ({ method: 'GET', path: `/layout/${id}`, headers });
  return [
    { name: 'demo', summary: 'The demo layout that `npm start` seeds, with no bridge running', request: get(withKey), status: 200, answer: demoLayout() },
    { name: 'noKey', summary: 'No x-api-key header', request: get({}), status: 401, answer: fail('api_key_missing') },
    { name: 'wrongKey', summary: 'A key that is not one of yours', request: get({ 'x-api-key': 'ak_ffffffffffffffff.not-a-real-secret-not-a-real-secret-not-a-r' }), status: 401, answer: fail('api_key_invalid') },
    { name: 'unknownLayout', summary: 'A layout that does not exist, or is outside the key’s scope', request: get(withKey, 'no-such-layout'), status: 404, answer: fail('layout_not_found') },
  ];
}

export function tokenExamples(): Example[] {
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

export function actionExamples(): Example[] {
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

export function preflightExamples(): Example[] {
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
export function attachExamples(operation: Json, examples: Example[]): void {
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

