// The AsyncAPI 3.0 document of the live channel: served at GET /asyncapi.json exactly as committed
// (schemas/asyncapi.json) and as built from schemas/, valid for the AsyncAPI parser, linked from
// the OpenAPI document; and the frames a real gateway sends and takes match its schemas.
import { readFileSync } from 'node:fs';
import { Parser } from '@asyncapi/parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildLiveTypes, LIVE_TYPES_FILE } from '../../gateway/openapi/live-types.js';
import { buildAsyncApiDocument } from '../../gateway/openapi/asyncapi.js';
import { createAjv } from '../../schemas/ajv.js';
import { CROWD_LAYOUT } from '../helpers/crowd.js';
import { call, eventually, mintToken, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { connectLive } from '../helpers/live.js';
import { useRedis } from '../helpers/redis.js';

const COMMITTED = JSON.parse(readFileSync('schemas/asyncapi.json', 'utf8')) as Record<string, unknown>;
const OPENAPI = JSON.parse(readFileSync('schemas/openapi.json', 'utf8')) as { paths: Record<string, unknown>; externalDocs: { url: string }; components: { schemas: Record<string, unknown> } };

const redis = useRedis();
let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ redisUrl: redis.get().server.url, layout: CROWD_LAYOUT });
});
afterAll(() => t.close());

describe('the AsyncAPI document of the live channel', () => {
  it('is served at GET /asyncapi.json exactly as committed and as built from schemas/ (run `npm run openapi` after changing them)', async () => {
    const served = await call(`${t.url}/asyncapi.json`);
    expect(served.status).toBe(200);
    expect(served.body).toEqual(COMMITTED);
    expect(buildAsyncApiDocument()).toEqual(COMMITTED);
  });

  it('is a valid AsyncAPI 3.0 document for the AsyncAPI parser: no error, no warning', async () => {
    const { document, diagnostics } = await new Parser().parse(JSON.stringify(COMMITTED));
    // severity 0 is an error, 1 a warning (2 and 3 are hints, e.g. that a newer version exists)
    const problems = diagnostics.filter((d) => Number(d.severity) <= 1).map((d) => `${d.path.join('.')}: ${d.message}`);
    expect(problems).toEqual([]);
    expect(document?.version()).toBe('3.0.0');
    expect(document?.channels().get('live')?.address()).toBe('/live');
    expect(document?.messages().all().map((m) => m.name()).sort()).toEqual(['ack', 'action', 'crowd', 'error', 'expiring', 'light', 'page', 'ping', 'pong', 'refresh', 'refreshed', 'restate', 'time', 'timeAnswer']);
    // the token as the bearer subprotocol is the server's security scheme
    expect(document?.servers().get('gateway')?.security().flatMap((r) => r.all().map((x) => x.scheme().type()))).toEqual(['httpApiKey']);
    // a broken one is caught: the check can fail
    const broken = structuredClone(COMMITTED) as { channels: { live: { messages: Record<string, unknown> } } };
    broken.channels.live.messages.page = { $ref: '#/components/messages/nowhere' };
    const again = await new Parser().parse(JSON.stringify(broken));
    expect(again.diagnostics.filter((d) => Number(d.severity) === 0).length).toBeGreaterThan(0);
  });

  it('types the value of an action frame by control type, as the OpenAPI document types POST /action', () => {
    const schemas = (COMMITTED.components as { schemas: Record<string, { properties?: Record<string, unknown>; oneOf?: unknown[] }> }).schemas;
    expect(schemas.ActionFrame!.oneOf).toHaveLength(6);
    expect(schemas.SliderActionFrame!.properties!.value).toEqual({ $ref: '#/components/schemas/SliderValue' });
    expect(schemas.SliderActionFrame!.properties!.type).toEqual({ const: 'Slider' });
    expect(schemas.SliderValue).toEqual(OPENAPI.components.schemas.SliderValue);
    expect(schemas.XYPadValue).toEqual(OPENAPI.components.schemas.XYPadValue);
  });

  it('is what schemas/live-types.ts, the frames\' TypeScript types, is generated from (run `npm run openapi` after changing schemas/)', async () => {
    expect(await buildLiveTypes()).toBe(readFileSync(LIVE_TYPES_FILE, 'utf8'));
  });

  it('is linked from the OpenAPI document', () => {
    expect(OPENAPI.externalDocs.url).toBe('/asyncapi.json');
    expect(Object.keys(OPENAPI.paths)).toContain('/asyncapi.json');
  });

  it('describes the frames a real gateway sends (page, crowd, ack, error) and takes (action)', async () => {
    const ajv = createAjv();
    const check = (def: string, frame: unknown) => {
      const validate = ajv.getSchema(`live-server-frames.schema.json#/$defs/${def}`)!;
      expect(validate(frame), `${def}: ${JSON.stringify(validate.errors)} in ${JSON.stringify(frame).slice(0, 200)}`).toBe(true);
    };
    const live = await connectLive(t.url, await mintToken(t, t.layoutId, t.apiKey));
    const actions = [
      { op: 'action', ref: 's', lid: 2, type: 'Slider', value: 0.25 },
      { op: 'action', ref: 'v', lid: 4, type: 'Index', value: 1, idempotencyKey: 'k-1' },
      { op: 'action', ref: 'x', lid: 6, type: 'XYPad', value: [0.1, 0.9] },
      { op: 'action', ref: 'b', lid: 1, type: 'Button' },
    ];
    for (const a of actions) expect(ajv.getSchema('live-frames.schema.json')!(a)).toBe(true);
    for (const a of actions) live.send(a);
    live.send({ op: 'action', ref: 'bad', lid: 2, type: 'Slider', value: 5 });
    live.ws.send('not json');
    await eventually(() => live.frames.filter((f) => f.op === 'ack').length === 4 && live.frames.filter((f) => f.op === 'error').length === 2 && live.frames.filter((f) => f.op === 'crowd').length >= 4);
    const seen = new Set<string>();
    for (const f of live.frames) {
      check(f.op, f);
      seen.add(f.op);
    }
    expect([...seen].sort()).toEqual(['ack', 'crowd', 'error', 'page']);
    live.ws.close();
  });
});
