// The AsyncAPI 3.0 document of the live channel (GET /live), built from the JSON Schemas the
// gateway validates frames with (live-frames.schema.json) and writes them by
// (live-server-frames.schema.json, which the tests hold the real frames to), with the components
// the OpenAPI document shares (Control, Id, the values by type). Served at GET /asyncapi.json and
// committed as schemas/asyncapi.json (`npm run openapi` writes both; a test keeps them equal).
import { CLOSE, CLOSE_ACTION, FRAME_LIMITS } from '../../schemas/live-protocol.js';
import { CONTROL_TYPES } from '../../schemas/types.js';
import { componentSchemas, readSchema, rewrite } from './document.js';
import type { Json } from './examples.js';

const SERVER_FRAMES = 'live-server-frames.schema.json';
const CLIENT_FRAMES = 'live-frames.schema.json';

/** The frames, each a message of the channel: [message name, component schema, what it is]. */
const FRAMES: readonly [string, string, string][] = [
  ['page', 'PageFrame', 'page'],
  ['crowd', 'CrowdFrame', 'crowd'],
  ['ack', 'AckFrame', 'ack'],
  ['error', 'ErrorFrame', 'error'],
  ['expiring', 'ExpiringFrame', 'expiring'],
  ['refreshed', 'RefreshedFrame', 'refreshed'],
  ['pong', 'PongFrame', 'pong'],
  ['timeAnswer', 'TimeAnswerFrame', 'time'],
  ['light', 'LightFrame', 'light'],
];

/** What each close code says, from the protocol module (schemas/live-protocol.ts). */
const CLOSE_WORDS: Record<(typeof CLOSE_ACTION)[keyof typeof CLOSE_ACTION], string> = {
  renew: 'renew the token (POST /token with renew), then reconnect; do not reconnect with this token',
  stop: 'stop; do not reconnect',
  reconnect: 'reconnect (after the reason’s retryAfterMs, if it has one) with full jitter',
  'reconnect-later': 'reconnect later, slower',
};
const CLOSE_NAMES: Record<number, string> = Object.fromEntries(Object.entries(CLOSE).map(([name, code]) => [code, name]));

const CHANNEL_DESCRIPTION = [
  'One WebSocket per phone: the live page, the crowd’s values, and the phone’s actions with their answers.',
  '',
  'Connecting: offer two subprotocols, `audience-control.v1` and `bearer.<audience token>` (from POST /token); the server selects `audience-control.v1`. Everything is checked before the upgrade, and a refusal is the HTTP API’s error answer, never a socket: 400 `upgrade_invalid` (no `Connection: Upgrade`), 403 `origin_not_allowed` (an Origin outside CORS_ORIGINS), 400 `protocol_missing`, 401 `token_missing` / `token_invalid` / `token_expired` / `token_revoked`, 404 `layout_not_found`, 503 `unavailable` with Retry-After (the process is at its socket caps).',
  '',
  `Close codes: ${Object.entries(CLOSE_ACTION)
    .map(([code, what]) => `${code} ${CLOSE_NAMES[Number(code)]} (${CLOSE_WORDS[what]})`)
    .join('; ')}. A ${CLOSE.serviceRestart} carries the reason {"retryAfterMs":N}: a draining gateway spreads its crowd's returns. Any other close: reconnect with full-jitter exponential backoff.`,
  '',
  `Token lifecycle: the token’s exp holds on an open socket. LIVE_EXPIRY_NOTICE_SECONDS before it the server sends expiring; the client renews the token (POST /token with renew: the same participant) and sends refresh, answered by refreshed; at exp the socket closes with ${CLOSE.tokenExpired}. Each participant holds at most LIVE_SOCKETS_PER_PARTICIPANT sockets over all gateway processes (a new one closes the oldest with ${CLOSE.replaced}, and a socket opened on another process closes these with ${CLOSE.replaced}) and opens at most LIVE_OPENS_PER_PARTICIPANT_PER_MINUTE (a process refuses the upgrade past it with 429 and Retry-After; past it over all processes the new socket closes with ${CLOSE.flooding}).`,
  '',
  `Heartbeat: a client that has heard nothing for ${FRAME_LIMITS.heartbeatIdleMs / 1000} s sends ping, answered by pong; a client that sent a ping or an action and heard nothing for ${FRAME_LIMITS.heartbeatDeadMs / 1000} s takes the link for dead (a path gone silent sends no close) and reconnects, resending its unanswered actions with their idempotency keys, and restating (restate) the latest acked value of each aggregated control with its age: a gateway lost with the participant's values counts it again at once.`,
  '',
  'Clock: a client estimates the server’s clock as NTP does, from time exchanges: each answer carries when the server received the frame and when it answered, in Redis’s clock (every gateway process of a deployment answers in that one timebase), and the exchange of least round trip of the last minute gives the offset, right within half its round trip.',
  '',
  'Light: on a layout with a light canvas, each look the show plays for the socket’s zone (or every zone) arrives as a light frame lightLeadMs before its at; the phone shows it from at on its estimate of the server’s clock, placing a wave by its token’s seat claim, and never flashes more than 3 times a second.',
  '',
  'Limits: actions share the participant’s budget with POST /action (error `rate_limited` with retryAfterMs); a frame over MAX_BODY_BYTES closes the socket. Page, crowd and light frames are latest-value state: a socket over LIVE_BUFFER_BYTES is skipped and gets the current state when it drains.',
].join('\n');

/** The names of the components `node` refers to, and those they refer to, into `into`. */
function reachable(node: unknown, all: Json, into: Set<string>): Set<string> {
  if (Array.isArray(node)) node.forEach((n) => reachable(n, all, into));
  else if (typeof node === 'object' && node !== null) {
    for (const [k, v] of Object.entries(node)) {
      const name = k === '$ref' && typeof v === 'string' ? v.replace('#/components/schemas/', '') : null;
      if (name !== null && !into.has(name)) reachable(all[name], all, into.add(name));
      else reachable(v, all, into);
    }
  }
  return into;
}

/**
 * The action frame as one schema per control type, told apart by `type`, each with its own
 * `value` (as the OpenAPI document's ActionRequest), so generated models type the value.
 */
function actionFrames(frames: Json, action: Json): void {
  const props = rewrite(action.properties, CLIENT_FRAMES, false) as Json;
  const required = action.required as string[];
  for (const type of CONTROL_TYPES) {
    frames[`${type}ActionFrame`] = {
      title: `An action on a ${type} control`,
      type: 'object',
      required: type === 'Button' ? required : [...required, 'value'],
      additionalProperties: false,
      properties: { ...props, type: { const: type }, value: { $ref: `#/components/schemas/${type}Value` } },
    };
  }
  frames.ActionFrame = {
    title: action.title,
    description: `${String(action.description)} One schema per control type, chosen by \`type\`.`,
    oneOf: CONTROL_TYPES.map((t) => ({ $ref: `#/components/schemas/${t}ActionFrame` })),
  };
}

export function buildAsyncApiDocument(): Json {
  const shared = componentSchemas();
  const frames: Json = {};
  const defs = readSchema(SERVER_FRAMES).$defs as Json;
  for (const [, name, def] of FRAMES) frames[name] = rewrite(defs[def], SERVER_FRAMES, false);
  const client = readSchema(CLIENT_FRAMES).$defs as Json;
  actionFrames(frames, client.action as Json);
  frames.RefreshFrame = rewrite(client.refresh, CLIENT_FRAMES, false);
  frames.RestateFrame = rewrite(client.restate, CLIENT_FRAMES, false);
  frames.PingFrame = rewrite(client.ping, CLIENT_FRAMES, false);
  frames.TimeFrame = rewrite(client.time, CLIENT_FRAMES, false);
  // only the shared components the frames use (the REST bodies are the OpenAPI document's)
  const schemas: Json = { ...frames, ...Object.fromEntries([...reachable(frames, shared, new Set())].filter((name) => name in shared).sort().map((name) => [name, shared[name]])) };
  const message = (name: string, schema: string): Json => {
    const s = schemas[schema] as Json;
    return { name, title: s.title, summary: s.description, contentType: 'application/json', payload: { $ref: `#/components/schemas/${schema}` } };
  };
  const messages: Json = { action: message('action', 'ActionFrame'), refresh: message('refresh', 'RefreshFrame'), restate: message('restate', 'RestateFrame'), ping: message('ping', 'PingFrame'), time: message('time', 'TimeFrame') };
  for (const [name, schema] of FRAMES) messages[name] = message(name, schema);
  const inChannel = (name: string): Json => ({ $ref: `#/channels/live/messages/${name}` });
  const channel = { $ref: '#/channels/live' };
  return {
    asyncapi: '3.0.0',
    info: {
      title: 'audience-control live channel',
      version: '1.0.0',
      description: 'The gateway’s WebSocket for audience apps. The REST API (GET /layout, POST /token, POST /action) is described by the OpenAPI document at /openapi.json.',
      externalDocs: { description: 'The REST API: OpenAPI 3.1, at /openapi.json on every gateway (here the demo’s)', url: 'http://127.0.0.1:8080/openapi.json' },
    },
    defaultContentType: 'application/json',
    servers: {
      gateway: {
        host: '127.0.0.1:8080',
        protocol: 'ws',
        description: 'The demo gateway that `npm start` runs; in production wss://<your gateway>.',
        security: [{ $ref: '#/components/securitySchemes/bearerSubprotocol' }],
      },
    },
    channels: {
      live: {
        address: '/live',
        title: 'The live channel',
        description: CHANNEL_DESCRIPTION,
        messages: Object.fromEntries(Object.keys(messages).map((name) => [name, { $ref: `#/components/messages/${name}` }])),
        bindings: {
          ws: {
            method: 'GET',
            headers: {
              type: 'object',
              required: ['Sec-WebSocket-Protocol'],
              properties: { 'Sec-WebSocket-Protocol': { type: 'string', description: '`audience-control.v1, bearer.<audience token>`' } },
            },
          },
        },
      },
    },
    operations: {
      receiveAction: {
        action: 'receive',
        channel,
        summary: 'An action from the phone, answered by an ack once stored or an error with the HTTP API’s code.',
        messages: [inChannel('action')],
        reply: { channel, messages: [inChannel('ack'), inChannel('error')] },
      },
      sendPage: { action: 'send', channel, summary: 'The live page: first, and after every page switch or re-import.', messages: [inChannel('page')] },
      sendCrowd: { action: 'send', channel, summary: 'The crowd’s value of an aggregated control on the live page, at most 4 times a second per control.', messages: [inChannel('crowd')] },
      receiveRefresh: {
        action: 'receive',
        channel,
        summary: 'The same participant’s new token for this socket, answered by refreshed, or an error with ref null (the socket keeps its old token).',
        messages: [inChannel('refresh')],
        reply: { channel, messages: [inChannel('refreshed'), inChannel('error')] },
      },
      receiveRestate: {
        action: 'receive',
        channel,
        summary: 'After a reconnect, the latest acked value of each aggregated control with its age: counted where the process holds none (its gateway was lost), answered by an ack or an error.',
        messages: [inChannel('restate')],
        reply: { channel, messages: [inChannel('ack'), inChannel('error')] },
      },
      receivePing: {
        action: 'receive',
        channel,
        summary: 'A heartbeat from a phone that heard nothing for a while, answered by pong (at most once a second per socket).',
        messages: [inChannel('ping')],
        reply: { channel, messages: [inChannel('pong'), inChannel('error')] },
      },
      receiveTime: {
        action: 'receive',
        channel,
        summary: `A clock exchange, answered by time with the server's receive and send times in the deployment's one timebase (at most ${FRAME_LIMITS.time.socketBurst} at once and ${FRAME_LIMITS.time.socketPerMinute} a minute per socket; past that an error rate_limited with the frame's ref, and the socket stays open).`,
        messages: [inChannel('time')],
        reply: { channel, messages: [inChannel('timeAnswer'), inChannel('error')] },
      },
      sendLight: {
        action: 'send',
        channel,
        summary: 'A light look for the socket’s zone (zone * for every zone) from a server time at on, sent the layout’s lightLeadMs ahead of it; a socket gets its zone’s current look when it opens or catches up.',
        messages: [inChannel('light')],
      },
      sendExpiring: { action: 'send', channel, summary: 'The socket’s token expires soon: renew it and send refresh.', messages: [inChannel('expiring')] },
      sendError: { action: 'send', channel, summary: 'A frame that does not parse: an error with ref null.', messages: [inChannel('error')] },
    },
    components: {
      schemas,
      messages,
      securitySchemes: {
        bearerSubprotocol: {
          type: 'httpApiKey',
          in: 'header',
          name: 'Sec-WebSocket-Protocol',
          description: 'The audience token (from POST /token), offered as the subprotocol `bearer.<token>` beside `audience-control.v1`: a browser’s WebSocket cannot send an Authorization header, and a token in the URL would land in access logs.',
        },
      },
    },
  };
}
