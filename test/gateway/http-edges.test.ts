// The HTTP edge: body limits without buffering, hostile and malformed input, request ids, 404/405.
// No input may produce a 5xx, a crash or a hang.
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { call, postAction, postJson, useGatewayWithToken } from '../helpers/gateway.js';
import { raw } from '../helpers/raw-http.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
const g = useGatewayWithToken(() => redis.get().server.url);


describe('body limits', () => {
  it('answers 413 at once for a declared body over 16 KiB, without waiting for it', async () => {
    const r = await raw(g.t.gw.port, [
      `POST /action HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer ${g.token}\r\nContent-Length: 50000000\r\n\r\n`,
      '{"layoutId":',
    ]);
    expect(r.text).toMatch(/^HTTP\/1.1 413/);
    expect(r.text).toContain('"body_too_large"');
    expect(r.closed).toBe(true);
    expect(r.elapsed).toBeLessThan(1000);
  });

  it('answers 413 to a chunked body once it passes the limit, and stops reading', async () => {
    const chunk = (s: string) => `${s.length.toString(16)}\r\n${s}\r\n`;
    const r = await raw(g.t.gw.port, [
      `POST /action HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer ${g.token}\r\nTransfer-Encoding: chunked\r\n\r\n`,
      chunk('x'.repeat(10_000)),
      chunk('x'.repeat(10_000)),
    ]);
    expect(r.text).toMatch(/^HTTP\/1.1 413/);
    expect(r.closed).toBe(true);
  });

  it('accepts a body just under the limit (it is parsed, then judged)', async () => {
    const body = JSON.stringify({ layoutId: g.t.layoutId, lid: 5, type: 'String', value: 'a'.repeat(16_000) });
    expect(body.length).toBeLessThan(16 * 1024);
    const r = await postAction(g.t, g.token, body);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('invalid_value'); // over 1,024 characters, but not over the body limit
  });
});

describe('malformed and hostile JSON', () => {
  it.each([
    ['an empty body', ''],
    ['truncated JSON', '{"layoutId":'],
    ['a trailing comma', '{"layoutId":"demo-show",}'],
    ['single quotes', "{'layoutId':'demo-show'}"],
    ['NaN', '{"layoutId":"demo-show","lid":NaN,"type":"Button"}'],
  ])('answers 400 invalid_json for %s', async (_what, body) => {
    const r = await postAction(g.t, g.token, body);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('invalid_json');
  });

  it('answers 400 for invalid UTF-8', async () => {
    const r = await call(`${g.t.url}/action`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${g.token}` },
      body: Buffer.concat([Buffer.from('{"layoutId":"'), Buffer.from([0xff, 0xfe]), Buffer.from('","lid":1,"type":"Button"}')]),
    });
    expect(r.status).toBe(400);
  });

  it('answers 400 invalid_json for invalid UTF-8 even where U+FFFD would fit (a String value)', async () => {
    const r = await call(`${g.t.url}/action`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${g.token}` },
      body: Buffer.concat([Buffer.from('{"layoutId":"demo-show","lid":5,"type":"String","value":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]),
    });
    expect([r.status, r.body.error?.code]).toEqual([400, 'invalid_json']);
  });

  it('answers 400 to deeply nested JSON', async () => {
    const deep = '['.repeat(8000) + ']'.repeat(8000);
    const r = await postAction(g.t, g.token, `{"layoutId":"demo-show","lid":1,"type":"Button","value":${deep}}`);
    expect(r.status).toBe(400);
  });

  it('refuses __proto__ as an unknown field and is not polluted by it', async () => {
    const r = await postAction(g.t, g.token, '{"layoutId":"demo-show","lid":1,"type":"Button","__proto__":{"polluted":true}}');
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('invalid_body');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('answers 400 to a lid too large to be a lid', async () => {
    const r = await postAction(g.t, g.token, '{"layoutId":"demo-show","lid":1e400,"type":"Button"}');
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('invalid_body');
  });

  it('never answers 5xx to random bytes on any route', async () => {
    const statuses = new Set<number>();
    for (let i = 0; i < 150; i++) {
      const body = i % 3 === 0 ? randomBytes(1 + (i % 200)) : Buffer.from(JSON.stringify({ layoutId: g.t.layoutId, lid: i % 10, type: ['Button', 'Slider', 'XYPad'][i % 3], value: randomBytes(4).toString('base64') }));
      const headers = { 'content-type': 'application/json', authorization: `Bearer ${g.token}`, 'x-api-key': g.t.apiKey };
      for (const path of ['/action', '/token']) statuses.add((await call(`${g.t.url}${path}`, { method: 'POST', headers, body })).status);
    }
    expect([...statuses].every((s) => s >= 400 && s < 500)).toBe(true);
  });

  it('keeps serving after all of the above', async () => {
    expect((await postAction(g.t, g.token, { layoutId: g.t.layoutId, lid: 1, type: 'Button' })).status).toBe(200);
  });
});

describe('one keep-alive connection', () => {
  /** Writes each request on one socket, the next once the previous answer is in; the answers' status lines. */
  async function onOneSocket(requests: string[]): Promise<string[]> {
    const socket = connect(g.t.gw.port, '127.0.0.1');
    socket.on('error', () => {});
    let received = '';
    socket.on('data', (d) => (received += d.toString('latin1')));
    // a status line follows the previous answer's body directly (no line break after a JSON body)
    const statuses = () => [...received.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => m[1]!);
    try {
      for (const [i, r] of requests.entries()) {
        socket.write(r);
        const until = Date.now() + 2000;
        while (statuses().length < i + 1 && !socket.destroyed && Date.now() < until) await new Promise((res) => setTimeout(res, 10));
      }
      return statuses();
    } finally {
      socket.destroy();
    }
  }

  it('serves a GET after a HEAD (HEAD answers the length without a body and keeps the connection)', async () => {
    const head = 'HEAD /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n';
    const get = 'GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n';
    expect(await onOneSocket([head, get, head, get])).toEqual(['200', '200', '200', '200']);
  });

  it('serves a POST /action after its CORS preflight, as a browser sends them', async () => {
    const body = JSON.stringify({ layoutId: g.t.layoutId, lid: 1, type: 'Button' });
    const preflight = 'OPTIONS /action HTTP/1.1\r\nHost: x\r\nOrigin: https://app.example\r\nAccess-Control-Request-Method: POST\r\n\r\n';
    const post = `POST /action HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer ${g.token}\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    expect(await onOneSocket([preflight, post, preflight, post])).toEqual(['204', '200', '204', '200']);
  });
});

describe('every response', () => {
  it('carries x-request-id, echoing a well-formed one from the client', async () => {
    const given = await call(`${g.t.url}/layout/${g.t.layoutId}`, { headers: { 'x-api-key': g.t.apiKey, 'x-request-id': 'trace-123' } });
    expect(given.headers.get('x-request-id')).toBe('trace-123');
    const hostile = await call(`${g.t.url}/layout/${g.t.layoutId}`, { headers: { 'x-api-key': g.t.apiKey, 'x-request-id': 'a b <script>' } });
    const RANDOM_ID = /^[0-9a-f]{16}$/;
    expect(hostile.headers.get('x-request-id')).toMatch(RANDOM_ID);
    // random: two ids in a row share no counter or boot id that would tell the process's request count or restarts
    const ids = [];
    for (let i = 0; i < 20; i++) ids.push((await call(`${g.t.url}/nowhere`)).headers.get('x-request-id')!);
    expect(new Set(ids).size).toBe(20);
    for (const id of ids) expect(id).toMatch(RANDOM_ID);
    const prefixes = new Set(ids.map((id) => id.slice(0, 8)));
    expect(prefixes.size).toBeGreaterThan(15);
  });

  it('answers an accepted action with one well-formed head: each header once, CORS, the JSON type and the body length', async () => {
    const body = JSON.stringify({ layoutId: g.t.layoutId, lid: 1, type: 'Button' });
    const r = await raw(g.t.gw.port, [
      `POST /action HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer ${g.token}\r\nX-Request-Id: once-1\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    ]);
    const [head, payload] = r.text.split('\r\n\r\n');
    const [status, ...lines] = head!.split('\r\n');
    expect(status).toBe('HTTP/1.1 200 OK');
    const names = lines.map((l) => l.slice(0, l.indexOf(':')).toLowerCase());
    expect(lines.every((l) => /^[A-Za-z-]+: \S.*$/.test(l))).toBe(true);
    expect(new Set(names).size).toBe(names.length);
    const header = (n: string) => lines.find((l) => l.toLowerCase().startsWith(`${n}: `))?.slice(n.length + 2);
    expect(header('x-request-id')).toBe('once-1');
    expect(header('access-control-allow-origin')).toBe('*');
    expect(header('access-control-expose-headers')).toBe('x-request-id, retry-after');
    expect(header('content-type')).toBe('application/json');
    expect(payload).toBe('{"success":true}');
    expect(Number(header('content-length'))).toBe(payload!.length);
  });

  it('uses the error body shape for 404 and 405', async () => {
    const nf = await call(`${g.t.url}/nowhere`);
    expect(nf.status).toBe(404);
    expect(nf.body).toEqual({ success: false, error: { code: 'not_found', message: expect.any(String) } });
    const na = await call(`${g.t.url}/token`);
    expect(na.status).toBe(405);
    expect(na.headers.get('allow')).toBe('POST');
    expect(na.body.error.code).toBe('method_not_allowed');
    const del = await call(`${g.t.url}/layout/${g.t.layoutId}`, { method: 'DELETE', headers: { 'x-api-key': g.t.apiKey } });
    expect(del.status).toBe(405);
  });

  it('answers HEAD like GET, without a body, on every GET route', async () => {
    for (const [path, headers] of [['/admin/', {}], [`/layout/${g.t.layoutId}`, { 'x-api-key': g.t.apiKey }], ['/admin/admin.css', {}]] as const) {
      const get = await fetch(`${g.t.url}${path}`, { headers });
      const body = Buffer.from(await get.arrayBuffer());
      const head = await fetch(`${g.t.url}${path}`, { method: 'HEAD', headers });
      expect([head.status, path]).toEqual([get.status, path]);
      expect(head.headers.get('content-type')).toBe(get.headers.get('content-type'));
      expect(Number(head.headers.get('content-length'))).toBe(body.length);
      expect((await head.arrayBuffer()).byteLength).toBe(0);
    }
    expect((await fetch(`${g.t.url}/nowhere`, { method: 'HEAD' })).status).toBe(404);
    expect((await call(`${g.t.url}/layout/${g.t.layoutId}`, { method: 'DELETE' })).headers.get('allow')).toBe('GET, HEAD');
  });

  it('answers 415 on /action for a non-JSON content type', async () => {
    const r = await postJson(`${g.t.url}/action`, '{}', { 'content-type': 'application/x-www-form-urlencoded', authorization: `Bearer ${g.token}` });
    expect(r.status).toBe(415);
    expect(r.body.error.code).toBe('unsupported_media_type');
  });
});
