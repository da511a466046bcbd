// One audience token is one participant: what it may send is limited per gateway process (a token
// bucket for every action, a second one for String actions), a layout may set its own rates, and a
// refused action is 429 rate_limited with Retry-After, costs no Redis write and is logged as a
// summary, not once per request.
// The flood from one token that leaves another participant's latency alone is in participant-flood.test.ts.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configProperties, type GatewayConfig } from '../../gateway/config.js';
import type { LayoutDefinition } from '../../schemas/types.js';
import { DEMO_LAYOUT, mintToken, postAction, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
/** The configuration's defaults of the limits tested here (the helpers raise them for other tests). */
const defaults = configProperties();
const DEFAULT_LIMITS = Object.fromEntries(['actionRatePerSecond', 'actionBurst', 'stringRatePerSecond', 'stringBurst'].map((k) => [k, defaults[k]!.default])) as Partial<GatewayConfig>;
const slider = (t: TestGateway, value = 0.5) => ({ layoutId: t.layoutId, lid: 2, type: 'Slider', value });
const shout = (t: TestGateway, value: string) => ({ layoutId: t.layoutId, lid: 5, type: 'String', value });
const streamLength = (t: TestGateway) => redis.get().client.xlen(t.gw.stores.keys.actions(t.layoutId));

describe('per-participant limits (defaults: 20 actions/s, burst 40; String 1/s, burst 5)', () => {
  it('are the configuration’s defaults', () => {
    expect(DEFAULT_LIMITS).toEqual({ actionRatePerSecond: 20, actionBurst: 40, stringRatePerSecond: 1, stringBurst: 5 });
  });

  let t: TestGateway;
  const lines: string[] = [];
  beforeAll(async () => {
    const sink = new Writable({ write: (chunk: Buffer, _e, done) => (lines.push(...chunk.toString().split('\n').filter(Boolean)), done()) });
    t = await startTestGateway({ redisUrl: redis.get().server.url, log: pino({ level: 'info' }, sink), overrides: DEFAULT_LIMITS });
  });
  afterAll(() => t.close());

  it('a burst past the bucket gets 429 rate_limited with Retry-After, and only the accepted actions reach Redis', async () => {
    const token = await mintToken(t, t.layoutId, t.apiKey);
    const before = await streamLength(t);
    const answers = await Promise.all(Array.from({ length: 120 }, (_, i) => postAction(t, token, slider(t, (i % 100) / 100))));
    const ok = answers.filter((a) => a.status === 200).length;
    const limited = answers.filter((a) => a.status === 429);
    // 40 at once, plus what 20 a second refills while the 120 are answered
    expect(ok).toBeGreaterThanOrEqual(40);
    expect(ok).toBeLessThan(60);
    expect(limited.length).toBe(120 - ok);
    expect(limited[0]!.body.error.code).toBe('rate_limited');
    expect(Number(limited[0]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(limited[0]!.headers.get('access-control-expose-headers')).toContain('retry-after');
    expect((await streamLength(t)) - before).toBe(ok);
  });

  it('String actions have their own, smaller budget; other controls still pass', async () => {
    const token = await mintToken(t, t.layoutId, t.apiKey);
    const strings = [];
    for (let i = 0; i < 7; i++) strings.push((await postAction(t, token, shout(t, `hello ${i}`))).status);
    expect(strings.slice(0, 5)).toEqual([200, 200, 200, 200, 200]);
    expect(strings.slice(5)).toEqual([429, 429]);
    expect((await postAction(t, token, slider(t))).status).toBe(200);
  });

  it('another participant is untouched by one that is limited', async () => {
    const flooder = await mintToken(t, t.layoutId, t.apiKey);
    const other = await mintToken(t, t.layoutId, t.apiKey);
    // the other participant's action goes out last in the same burst, behind 120 of the flooder's,
    // so it meets the flooder's empty bucket (the burst takes longer than one 50 ms refill, so the
    // flooder's own next action may pass again: that is the rate, not a leak)
    const answers = await Promise.all([...Array.from({ length: 120 }, () => postAction(t, flooder, slider(t))), postAction(t, other, slider(t))]);
    const flooded = answers.slice(0, -1);
    expect(flooded.filter((a) => a.status === 429).length).toBeGreaterThan(40);
    expect(answers.at(-1)!.status).toBe(200);
  });

  it('a full budget comes back: after a pause the same token is accepted again', async () => {
    const token = await mintToken(t, t.layoutId, t.apiKey);
    await Promise.all(Array.from({ length: 60 }, () => postAction(t, token, slider(t))));
    // the bucket gains a token every 50 ms: on a slow turn the next request may take one, so ask until the budget is spent
    let r = await postAction(t, token, slider(t));
    for (let i = 0; i < 100 && r.status !== 429; i++) r = await postAction(t, token, slider(t));
    expect(r.status).toBe(429);
    await new Promise((res) => setTimeout(res, Number(r.headers.get('retry-after')) * 1000));
    expect((await postAction(t, token, slider(t))).status).toBe(200);
  });

  it('refusals are logged as a summary: a few lines for thousands of 429s', async () => {
    const token = await mintToken(t, t.layoutId, t.apiKey);
    const before = lines.length;
    let limited = 0;
    for (let round = 0; round < 10; round++) {
      const answers = await Promise.all(Array.from({ length: 200 }, () => postAction(t, token, slider(t))));
      limited += answers.filter((a) => a.status === 429).length;
    }
    expect(limited).toBeGreaterThan(1500);
    const refusalLines = lines.slice(before).filter((l) => l.includes('rate limit'));
    expect(refusalLines.length).toBeLessThanOrEqual(2);
  });
});

describe('a layout sets its own limits', () => {
  let t: TestGateway;
  const layout: LayoutDefinition = { ...DEMO_LAYOUT, layoutId: 'tight-show', limits: { actionBurst: 3, actionsPerSecond: 0.5, stringBurst: 1 } };
  beforeAll(async () => {
    t = await startTestGateway({ redisUrl: redis.get().server.url, layout, overrides: DEFAULT_LIMITS });
  });
  afterAll(() => t.close());

  it('actionBurst 3: the fourth action at once is 429', async () => {
    const token = await mintToken(t, t.layoutId, t.apiKey);
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await postAction(t, token, slider(t))).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
  });

  it('stringBurst 1: the second String at once is 429', async () => {
    const token = await mintToken(t, t.layoutId, t.apiKey);
    expect((await postAction(t, token, shout(t, 'one'))).status).toBe(200);
    expect((await postAction(t, token, shout(t, 'two'))).status).toBe(429);
  });

  it('a re-import without limits returns the layout to the defaults', async () => {
    const { limits: _, ...plain } = layout;
    await t.admin.layouts.import(t.teamId, plain);
    const token = await mintToken(t, t.layoutId, t.apiKey);
    await new Promise((r) => setTimeout(r, 100)); // the invalidation message
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await postAction(t, token, slider(t))).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200]);
  });
});
