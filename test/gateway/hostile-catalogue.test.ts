// The hostile-input catalogue of issue 11's red-team pass: each finding as the requests that showed
// it, with the answer it must now get, against one gateway. (Some findings have fuller tests beside
// their code: admin/api.test.ts, gateway/action.test.ts, http-edges.test.ts, layout-existence.test.ts.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { login, signIn } from '../helpers/admin.js';
import { recordFigure } from '../helpers/figures.js';
import { DEMO_LAYOUT, call, mintToken, postAction, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { raw } from '../helpers/raw-http.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
const PASSWORD = 'correct horse battery staple';
let t: TestGateway;
let token: string;
const g = { get t() { return t; }, get token() { return token; } };
beforeAll(async () => {
  t = await startTestGateway({ redisUrl: redis.get().server.url, overrides: { adminLoginMaxPerAccount: 5, adminLoginMaxPerAddress: 1000 } });
  token = await mintToken(t, t.layoutId, t.apiKey);
  await t.admin.admins.create(t.teamId, 'boss@team.example', PASSWORD);
});
afterAll(() => t.close());


/** p99 of /action latency over `ms`, from 8 clients in a loop. */
async function actionP99(ms: number): Promise<{ p99: number; count: number }> {
  const latencies: number[] = [];
  const until = performance.now() + ms;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (performance.now() < until) {
        const started = performance.now();
        await postAction(t, token, { layoutId: t.layoutId, lid: 1, type: 'Button' });
        latencies.push(performance.now() - started);
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return { p99: latencies[Math.floor(latencies.length * 0.99)] ?? NaN, count: latencies.length };
}

describe('finding 1: the sign-in limit under a flood', () => {
  it('60 parallel sign-ins while /action is loaded: at most the limit evaluated; /action p99 recorded quiet and during', async () => {
    const quiet = await actionP99(2000);
    const [during, answers] = await Promise.all([actionP99(2000), Promise.all(Array.from({ length: 60 }, () => login(t, 'boss@team.example', 'wrong')))]);
    const evaluated = answers.filter((r) => r.status === 401).length;
    expect(evaluated).toBeLessThanOrEqual(5);
    expect(answers.every((r) => r.status === 401 || r.status === 429)).toBe(true);
    recordFigure('signin_flood_evaluated', evaluated, 'sign-ins', 'of 60 parallel wrong passwords; limit 5');
    recordFigure('action_p99_quiet_ms', quiet.p99, 'ms', `${quiet.count} actions, 8 clients, 2 s`);
    recordFigure('action_p99_during_signin_flood_ms', during.p99, 'ms', `${during.count} actions; issue 11 asks for at most 2x the quiet figure (reported, not asserted)`);
  });
});

describe('finding 2: one token, one spelling', () => {
  it.each([
    ['a trailing =', (s: string) => `${s}=`],
    ['a space inside the signature', (s: string) => `${s.slice(0, 9)} ${s.slice(9)}`],
  ])('%s: 401 token_invalid', async (_what, respell) => {
    const [h, p, s] = token.split('.') as [string, string, string];
    const r = await postAction(t, `${h}.${p}.${respell(s)}`, { layoutId: t.layoutId, lid: 1, type: 'Button' });
    expect([r.status, r.body.error.code]).toEqual([401, 'token_invalid']);
  });
});

describe('findings 3, 4 and 5: framing, pipelining, and what the HTTP parser drops', () => {
  const body = () => JSON.stringify({ layoutId: g.t.layoutId, lid: 5, type: 'String', value: `framing-${Math.random()}` });
  const post = (b: string, lengths: string) =>
    `POST /action HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer ${g.token}\r\n${lengths}\r\n${b}`;
  const inStream = async (b: string) => {
    const value = (JSON.parse(b) as { value: string }).value;
    const entries = await redis.get().client.xrange(g.t.gw.stores.keys.actions(g.t.layoutId), '-', '+');
    return entries.filter(([, f]) => f[1]!.includes(value)).length;
  };

  it('answers 400 and closes for two Content-Length headers (a proxy may pick the other one)', async () => {
    const b = body();
    const r = await raw(g.t.gw.port, [post(b, `Content-Length: ${b.length}\r\nContent-Length: 5\r\n`)]);
    expect(r.text).toMatch(/^HTTP\/1.1 400/);
    expect(r.text).toContain('"invalid_request"');
    expect(r.closed).toBe(true);
    expect(await inStream(b)).toBe(0);
  });

  it('reads the first of a repeated header on a body route, as uWS getHeader does (Authorization given twice)', async () => {
    const b = body();
    const twice = (first: string, second: string) =>
      `POST /action HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: ${first}\r\nAuthorization: ${second}\r\nContent-Length: ${b.length}\r\n\r\n${b}`;
    const good = await raw(g.t.gw.port, [twice(`Bearer ${g.token}`, 'Bearer not.a.token')]);
    expect(good.text).toMatch(/^HTTP\/1.1 200/);
    expect(await inStream(b)).toBe(1);
    const bad = await raw(g.t.gw.port, [twice('Bearer not.a.token', `Bearer ${g.token}`)]);
    expect(bad.text).toMatch(/^HTTP\/1.1 401/);
    expect(bad.text).toContain('"token_invalid"');
    expect(await inStream(b)).toBe(1);
  });

  it('refuses Transfer-Encoding with Content-Length without applying anything (uWS closes the connection)', async () => {
    const b = body();
    const r = await raw(g.t.gw.port, [post(`${b.length.toString(16)}\r\n${b}\r\n0\r\n\r\n`, `Transfer-Encoding: chunked\r\nContent-Length: ${b.length}\r\n`)]);
    expect(r.closed).toBe(true);
    expect(r.text).not.toMatch(/ 200 /);
    expect(await inStream(b)).toBe(0);
  });

  it('applies no pipelined action whose answer could not be sent', async () => {
    const [a, b] = [body(), body()];
    const r = await raw(g.t.gw.port, [post(a, `Content-Length: ${a.length}\r\n`) + post(b, `Content-Length: ${b.length}\r\n`)]);
    await new Promise((res) => setTimeout(res, 200));
    const answered = (r.text.match(/HTTP\/1.1 200/g) ?? []).length;
    expect((await inStream(a)) + (await inStream(b))).toBe(answered); // every action applied was answered 200, and only those
  });
  it('a 1 MiB body sent at once with its Content-Length gets the 413, not a reset', async () => {
    const r = await raw(t.gw.port, [Buffer.concat([Buffer.from(`POST /action HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer ${token}\r\nContent-Length: 1048576\r\n\r\n`), Buffer.alloc(1048576, 0x20)])]);
    expect(r.text).toMatch(/^HTTP\/1.1 413/);
    expect(r.text).toContain('"body_too_large"');
  });

  it('what the HTTP parser refuses gets an answer at once and a closed connection (uWS 20.51 answers them itself)', async () => {
    const cases: [string, string, RegExp][] = [
      ['100 headers', `GET /layout/x HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 100 }, (_, i) => `X-H${i}: v\r\n`).join('')}\r\n`, /^HTTP\/1.1 431 /],
      ['a NUL in a header value', `GET /layout/x HTTP/1.1\r\nHost: x\r\nX-A: a\u0000b\r\n\r\n`, /^HTTP\/1.1 400 /],
      ['a folded header', `GET /layout/x HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n`, /^HTTP\/1.1 400 /],
      // uWS speaks HTTP/1.1 only and answers anything else with 505 (its own answer, not the gateway's)
      ['HTTP/1.0 without Host', `GET /layout/x HTTP/1.0\r\n\r\n`, /^HTTP\/1.1 505 /],
      ['bytes that are not HTTP', `\u0001\u0002garbage\r\n\r\n`, /^HTTP\/1.1 505 /],
    ];
    const answers = await Promise.all(cases.map(([, req]) => raw(t.gw.port, [req], 5000)));
    answers.forEach((r, i) => {
      expect([cases[i]![0], r.text]).toEqual([cases[i]![0], expect.stringMatching(cases[i]![2])]);
      expect(r.closed).toBe(true);
    });
    recordFigure('uws_refused_request_closed_after_ms', Math.max(...answers.map((r) => r.elapsed)), 'ms', 'answered and closed by uWS 20.51 (20.30 held them ~11 s unanswered)');
    expect((await call(`${t.url}/layout/${t.layoutId}`, { headers: { 'x-api-key': t.apiKey } })).status).toBe(200); // still serving
  });
});

describe('finding 6: layout existence', () => {
  it('another team’s layout reads like a missing one; an import over its id is 409', async () => {
    const rival = await t.admin.teams.create('Rival');
    await t.admin.layouts.import(rival.teamId, { ...DEMO_LAYOUT, layoutId: 'cat-rival' });
    const a = await call(`${t.url}/layout/cat-rival`, { headers: { 'x-api-key': t.apiKey } });
    const b = await call(`${t.url}/layout/cat-none`, { headers: { 'x-api-key': t.apiKey } });
    expect([a.status, JSON.stringify(a.body)]).toEqual([b.status, JSON.stringify(b.body)]);
    const admin = await signIn(t, 'boss@team.example', PASSWORD);
    expect((await admin.req('PUT', '/admin/api/layouts/cat-rival', { ...DEMO_LAYOUT, layoutId: 'cat-rival' })).status).toBe(409);
  });
});

describe('finding 7: what is not an outage', () => {
  it('a definition nested 1,100 levels deep: 400 invalid_layout naming the path', async () => {
    let deep: unknown = 0;
    for (let i = 0; i < 1100; i++) deep = [deep];
    const admin = await signIn(t, 'boss@team.example', PASSWORD);
    const def = structuredClone(DEMO_LAYOUT) as typeof DEMO_LAYOUT & { pages: { controls: { props: Record<string, unknown> }[] }[] };
    def.pages[0]!.controls[0]!.props.deep = deep;
    const r = await admin.req('PUT', `/admin/api/layouts/${t.layoutId}`, def);
    expect([r.status, r.body.error.code]).toEqual([400, 'invalid_layout']);
    expect(r.body.error.message).toContain('pages[0].controls[0].props.deep');
  });
});

describe('finding 8: the smaller ones', () => {
  it('HEAD /admin/ answers like GET without a body', async () => {
    const r = await fetch(`${t.url}/admin/`, { method: 'HEAD' });
    expect(r.status).toBe(200);
    expect((await r.arrayBuffer()).byteLength).toBe(0);
  });

  it('an https:// Origin on this plain-HTTP gateway is refused', async () => {
    const r = await login(t, 'boss@team.example', PASSWORD, { origin: `https://${new URL(t.url).host}` });
    expect(r.body.error.code).toBe('origin_not_allowed');
  });

  it('invalid UTF-8 in a body is invalid_json', async () => {
    const r = await call(`${t.url}/action`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: Buffer.concat([Buffer.from(`{"layoutId":"${t.layoutId}","lid":5,"type":"String","value":"`), Buffer.from([0xff]), Buffer.from('"}')]),
    });
    expect([r.status, r.body.error.code]).toEqual([400, 'invalid_json']);
  });
});
