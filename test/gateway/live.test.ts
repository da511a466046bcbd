// The live channel, frame by frame, with the `ws` client against a real gateway: the token checked
// before the upgrade, the page first and after every switch, actions acked once stored (and in the
// stream), errors with the HTTP API's codes (the socket stays open), one budget per participant
// whichever way it acts, and the close codes: 4001 when the token is revoked, 1012 when the gateway
// stops (spread over LIVE_DRAIN_MS).
import { Writable } from 'node:stream';
import { decodeJwt } from 'jose';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { eventually, mintToken, postAction, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { attemptLive, closeOf, connectLive, liveProtocols, liveUrl, type Frame } from '../helpers/live.js';
import { useRedis } from '../helpers/redis.js';
import { CLOSE, retryAfterOf } from '../../schemas/live-protocol.js';

const redis = useRedis();
let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ redisUrl: redis.get().server.url, overrides: { actionBurst: 30, actionRatePerSecond: 1 } });
});
afterAll(() => t.close());

const connect = (token: string) => connectLive(t.url, token);
const refusal = async (protocols: string[], headers: Record<string, string> = {}) => attemptLive(t.url, protocols, headers);

describe('GET /live', () => {
  it('takes the token as the subprotocol bearer.<token> and selects audience-control.v1', async () => {
    const accepted = await refusal(liveProtocols(await mintToken(t, t.layoutId, t.apiKey)));
    expect([accepted.status, accepted.protocol]).toEqual([101, 'audience-control.v1']);
    accepted.ws!.close();
  });

  it('refuses the upgrade without a valid token, or without the protocol, before any socket exists: the HTTP error body', async () => {
    const missing = await refusal(['audience-control.v1']);
    expect([missing.status, JSON.parse(missing.body!).error.code]).toEqual([401, 'token_missing']);
    const invalid = await refusal(liveProtocols('not.a.token'));
    expect([invalid.status, JSON.parse(invalid.body!).error.code]).toEqual([401, 'token_invalid']);
    const token = await mintToken(t, t.layoutId, t.apiKey);
    const noProtocol = await refusal([`bearer.${token}`]);
    expect([noProtocol.status, JSON.parse(noProtocol.body!).error.code]).toEqual([400, 'protocol_missing']);
    const inQuery = await new Promise<number>((resolve) => {
      const ws = new WebSocket(`${liveUrl(t.url)}?token=${token}`, ['audience-control.v1']);
      ws.on('unexpected-response', (_req, res) => (resolve(res.statusCode ?? 0), ws.terminate()));
      ws.on('open', () => resolve(101));
      ws.on('error', () => {});
    });
    expect(inQuery).toBe(401); // a token in the URL is not read: it would land in access logs
  });

  it('checks Origin as CORS for POST /action: an origin outside CORS_ORIGINS gets 403', async () => {
    const g = await startTestGateway({ redisUrl: redis.get().server.url, sameDataAs: t, overrides: { corsOrigins: 'https://app.example' } });
    try {
      const token = await mintToken(t, t.layoutId, t.apiKey);
      const foreign = await attemptLive(g.url, liveProtocols(token), { origin: 'https://evil.example' });
      expect([foreign.status, JSON.parse(foreign.body!).error.code]).toEqual([403, 'origin_not_allowed']);
      const own = await attemptLive(g.url, liveProtocols(token), { origin: 'https://app.example' });
      expect(own.status).toBe(101);
      own.ws!.close();
      const none = await attemptLive(g.url, liveProtocols(token)); // not a browser: no Origin
      expect(none.status).toBe(101);
      none.ws!.close();
    } finally {
      await g.close();
    }
  });

  it('closes a socket that sends a frame over the size limit (MAX_BODY_BYTES), and answers a plain GET as no route', async () => {
    const { ws, next, closed } = await connect(await mintToken(t, t.layoutId, t.apiKey));
    await next('page');
    ws.send(JSON.stringify({ op: 'action', ref: 'big', lid: 5, type: 'String', value: 'x'.repeat(t.config.maxBodyBytes) }));
    expect([1006, 1009]).toContain((await closed).code); // uWS drops the connection at once (the client sees 1006)
    const plain = await fetch(`${t.url}/live`);
    expect(plain.status).toBeGreaterThanOrEqual(400);
    expect(plain.status).toBeLessThan(500);
  });

  it('sends the active page first: the controls as GET /layout has them, and a version', async () => {
    const { ws, next } = await connect(await mintToken(t, t.layoutId, t.apiKey));
    const page = await next('page');
    expect(page).toMatchObject({ op: 'page', layoutId: t.layoutId, activePageId: 'main' });
    expect((page.controls as { type: string }[]).map((c) => c.type)).toEqual(['Button', 'Slider', 'Toggle', 'Index', 'String', 'XYPad']);
    expect(typeof page.version).toBe('number');
    ws.close();
  });

  it('acks an action once it is in the stream, and answers a bad one with the HTTP code; the socket stays open', async () => {
    const { ws, frames, next } = await connect(await mintToken(t, t.layoutId, t.apiKey));
    await next('page');
    const before = frames.length;
    ws.send(JSON.stringify({ op: 'action', ref: 'r-1', lid: 5, type: 'String', value: 'over the socket' }));
    expect(await next('ack', before)).toEqual({ op: 'ack', ref: 'r-1' });
    const entries = await redis.get().client.xrange(t.gw.stores.keys.actions(t.layoutId), '-', '+');
    expect(entries.some(([, f]) => f[1]!.includes('over the socket'))).toBe(true);
    const errorsFrom = frames.length;
    ws.send(JSON.stringify({ op: 'action', ref: 'r-2', lid: 2, type: 'Slider', value: 'loud' }));
    ws.send('{not json');
    ws.send(Buffer.from([1, 2, 3]), { binary: true });
    ws.send(JSON.stringify({ op: 'dance', ref: 'r-3' }));
    ws.send(JSON.stringify({ op: 'action', ref: 'r-4', layoutId: 'another-layout', lid: 1, type: 'Button' }));
    ws.send(JSON.stringify({ op: 'action', ref: 'r-5', lid: 99, type: 'Button' }));
    await eventually(() => frames.slice(errorsFrom).filter((f) => f.op === 'error').length === 6);
    const codes = frames.slice(errorsFrom).map((f) => [f.ref, (f.error as { code: string }).code]);
    expect(codes).toEqual([
      ['r-2', 'invalid_value'],
      [null, 'invalid_json'],
      [null, 'invalid_json'],
      ['r-3', 'invalid_body'],
      ['r-4', 'token_layout_mismatch'],
      ['r-5', 'control_not_found'],
    ]);
    const after = frames.length;
    ws.send(JSON.stringify({ op: 'action', ref: 'r-6', lid: 1, type: 'Button' }));
    expect(await next('ack', after)).toEqual({ op: 'ack', ref: 'r-6' });
    ws.close();
  });

  it('gives one participant one budget, whichever way it acts: past it rate_limited with retryAfterMs', async () => {
    const token = await mintToken(t, t.layoutId, t.apiKey);
    for (let i = 0; i < 30; i++) await postAction(t, token, { layoutId: t.layoutId, lid: 1, type: 'Button' });
    const { ws, frames, next } = await connect(token);
    await next('page');
    const before = frames.length;
    ws.send(JSON.stringify({ op: 'action', ref: 'over', lid: 1, type: 'Button' }));
    const refused = await next('error', before);
    expect(refused).toMatchObject({ ref: 'over', error: { code: 'rate_limited' } });
    expect((refused.error as { retryAfterMs: number }).retryAfterMs).toBeGreaterThanOrEqual(1000);
    ws.close();
  });

  it('closes a socket that keeps flooding past its budget with 4029, without slowing another', async () => {
    const flood = await connect(await mintToken(t, t.layoutId, t.apiKey));
    await flood.next('page');
    const calm = await connect(await mintToken(t, t.layoutId, t.apiKey));
    await calm.next('page');
    for (let i = 0; i < 200 && flood.ws.readyState === WebSocket.OPEN; i++) flood.ws.send(JSON.stringify({ op: 'action', ref: `f-${i}`, lid: 1, type: 'Button' }));
    const { code } = await flood.closed;
    expect(code).toBe(4029);
    const acks = flood.frames.filter((f) => f.op === 'ack').length;
    const refused = flood.frames.filter((f) => f.op === 'error').length;
    expect(acks).toBeLessThanOrEqual(31); // the burst (and what a second refills)
    expect(refused).toBe(50); // then 50 refusals in a row, and the close
    const before = calm.frames.length;
    calm.ws.send(JSON.stringify({ op: 'action', ref: 'calm', lid: 1, type: 'Button' }));
    expect(await calm.next('ack', before)).toEqual({ op: 'ack', ref: 'calm' });
    calm.ws.close();
  });

  it('answers a heartbeat (ping) with pong, one every FRAME_LIMITS.pingMinMs per socket: a sooner one is rate_limited, and a flood of them closes the socket with 4029', async () => {
    const socket = await connect(await mintToken(t, t.layoutId, t.apiKey));
    await socket.next('page');
    let before = socket.frames.length;
    socket.send({ op: 'ping' });
    expect(await socket.next('pong', before)).toEqual({ op: 'pong' });
    before = socket.frames.length;
    socket.send({ op: 'ping' });
    expect(await socket.next('error', before)).toMatchObject({ op: 'error', ref: null, error: { code: 'rate_limited', retryAfterMs: 500 } });
    await new Promise((r) => setTimeout(r, 500));
    before = socket.frames.length;
    socket.send({ op: 'ping' });
    expect(await socket.next('pong', before)).toEqual({ op: 'pong' });
    for (let i = 0; i < 100 && socket.ws.readyState === WebSocket.OPEN; i++) socket.send({ op: 'ping' });
    expect((await socket.closed).code).toBe(4029);
    expect(socket.frames.filter((f) => f.op === 'pong')).toHaveLength(2);
  });

  it('sends the new page after a page switch, with a higher version and the moment of the switch (changedAt)', async () => {
    const { frames, next, ws } = await connect(await mintToken(t, t.layoutId, t.apiKey));
    const first = await next('page');
    const before = frames.length;
    const switchedFrom = Date.now();
    await t.admin.layouts.activate(t.layoutId, 'encore');
    const switchedBy = Date.now();
    const switched = await next('page', before);
    expect(switched.activePageId).toBe('encore');
    expect(switched.version as number).toBeGreaterThan(first.version as number);
    expect(switched.changedAt as number).toBeGreaterThanOrEqual(switchedFrom);
    expect(switched.changedAt as number).toBeLessThanOrEqual(switchedBy);
    expect(first.changedAt as number).toBeLessThan(switchedFrom);
    await t.admin.layouts.activate(t.layoutId, 'main');
    ws.close();
  });

  it('closes with 4001 when the layout revokes the token (end of show), and when its API key is revoked', async () => {
    const shown = await connect(await mintToken(t, t.layoutId, t.apiKey));
    await shown.next('page');
    await t.admin.layouts.revokeTokens(t.layoutId, { before: Date.now() });
    expect(await closeOf(shown)).toEqual({ code: 4001, reason: 'token_revoked' }); // the error code, whole (a close reason holds 123 bytes)
    const key = await t.admin.apiKeys.create(t.teamId, { name: 'to revoke' });
    const keyed = await connect(await mintToken(t, t.layoutId, key.apiKey));
    await keyed.next('page');
    await t.admin.apiKeys.revoke(key.keyId);
    expect(await closeOf(keyed)).toEqual({ code: 4001, reason: 'token_revoked' });
  });

  it('closes with 4001 a participant revoked after page switches, and only that one: its socket still gets every switch until then', async () => {
    // a page switch leaves the layout's revocations as they were, so its sockets are not looked at
    // one by one; a revocation that follows must still find its socket
    const revokedToken = await mintToken(t, t.layoutId, t.apiKey);
    const revoked = await connect(revokedToken);
    const kept = await connect(await mintToken(t, t.layoutId, t.apiKey));
    await Promise.all([revoked.next('page'), kept.next('page')]);
    for (const pageId of ['encore', 'main']) {
      const before = [revoked.frames.length, kept.frames.length] as const;
      await t.admin.layouts.activate(t.layoutId, pageId);
      expect((await revoked.next('page', before[0])).activePageId).toBe(pageId);
      expect((await kept.next('page', before[1])).activePageId).toBe(pageId);
    }
    await t.admin.layouts.revokeTokens(t.layoutId, { sub: decodeJwt(revokedToken).sub! });
    expect(await revoked.closed).toEqual({ code: 4001, reason: 'token_revoked' });
    const before = kept.frames.length;
    await t.admin.layouts.activate(t.layoutId, 'encore');
    expect((await kept.next('page', before)).activePageId).toBe('encore');
    expect(kept.ws.readyState).toBe(WebSocket.OPEN);
    await t.admin.layouts.activate(t.layoutId, 'main');
    kept.ws.close();
  });

  it('closes with 4001 when the signing key of its token is retired; a token of the new key keeps its socket', async () => {
    const old = await connect(await mintToken(t, t.layoutId, t.apiKey));
    await old.next('page');
    const retiring = (await t.admin.signingKeys.list()).find((k) => k.current)!.kid;
    await t.admin.signingKeys.rotate();
    await eventually(async () => {
      const fresh = await mintToken(t, t.layoutId, t.apiKey);
      return JSON.parse(Buffer.from(fresh.split('.')[0]!, 'base64url').toString()).kid !== retiring;
    });
    const renewed = await connect(await mintToken(t, t.layoutId, t.apiKey));
    await renewed.next('page');
    await t.admin.signingKeys.retire(retiring);
    expect(await old.closed).toEqual({ code: 4001, reason: 'token_revoked' });
    await new Promise((r) => setTimeout(r, 100));
    expect(renewed.ws.readyState).toBe(WebSocket.OPEN);
    renewed.ws.close();
  });
});

describe('the socket caps of a process (LIVE_MAX_SOCKETS, LIVE_NEW_SOCKETS_PER_SECOND)', () => {
  const attempt = (g: TestGateway, token: string) => attemptLive(g.url, liveProtocols(token));

  it('refuses a socket past LIVE_MAX_SOCKETS with 503 before the upgrade; a closed one frees its place', async () => {
    const g = await startTestGateway({ redisUrl: redis.get().server.url, sameDataAs: t, overrides: { liveMaxSockets: 3 } });
    try {
      // one participant each: a participant's third socket would close its first (LIVE_SOCKETS_PER_PARTICIPANT);
      // each held socket has its page (uWS drops one now and then right after its upgrade: connectLive opens it again)
      const tokens = await Promise.all(Array.from({ length: 5 }, () => mintToken(t, t.layoutId, t.apiKey)));
      const held = [];
      for (let i = 0; i < 3; i++) held.push(await connectLive(g.url, tokens[i]!));
      expect(held.map((h) => h.ws.readyState)).toEqual([WebSocket.OPEN, WebSocket.OPEN, WebSocket.OPEN]);
      const over = await attempt(g, tokens[3]!);
      expect([over.status, over.retryAfter]).toEqual([503, '1']);
      held[0]!.ws.close();
      await eventually(async () => {
        const again = await attempt(g, tokens[4]!);
        again.ws?.close();
        return again.status === 101;
      });
      for (const h of held) h.ws.close();
    } finally {
      await g.close();
    }
  });

  it('refuses new sockets past LIVE_NEW_SOCKETS_PER_SECOND with 503 and Retry-After 1 (a reconnect storm)', async () => {
    const g = await startTestGateway({ redisUrl: redis.get().server.url, sameDataAs: t, overrides: { liveNewSocketsPerSecond: 5 } });
    try {
      const token = await mintToken(t, t.layoutId, t.apiKey);
      const storm = await Promise.all(Array.from({ length: 15 }, () => attempt(g, token)));
      const accepted = storm.filter((s) => s.status === 101);
      const refused = storm.filter((s) => s.status === 503);
      expect(accepted.length).toBeGreaterThanOrEqual(5);
      expect(accepted.length).toBeLessThanOrEqual(7);
      expect(refused.length).toBe(15 - accepted.length);
      expect(refused.every((r) => r.retryAfter === '1')).toBe(true);
      for (const s of accepted) s.ws!.close();
    } finally {
      await g.close();
    }
  });
});

describe('refused upgrades (their own budget, per peer address)', () => {
  const from = (address: string) => ({ localAddress: address });

  it('a flood of upgrades without a token spends none of LIVE_NEW_SOCKETS_PER_SECOND: phones with tokens still open', async () => {
    const g = await startTestGateway({ redisUrl: redis.get().server.url, sameDataAs: t, overrides: { liveNewSocketsPerSecond: 30 } });
    try {
      const tokens = await Promise.all(Array.from({ length: 30 }, () => mintToken(t, t.layoutId, t.apiKey)));
      const flood = await Promise.all(Array.from({ length: 300 }, () => attemptLive(g.url, ['audience-control.v1'], {}, from('127.0.0.1'))));
      expect(flood.every((f) => f.status === 401 || f.status === 429)).toBe(true);
      expect(flood.filter((f) => f.status === 429).length).toBeGreaterThan(0); // the flooder's address is past its refusals
      const phones = await Promise.all(tokens.map((token) => attemptLive(g.url, liveProtocols(token), {}, from('127.0.0.2'))));
      expect(phones.map((p) => p.status)).toEqual(tokens.map(() => 101));
      for (const p of phones) p.ws!.close();
    } finally {
      await g.close();
    }
  });

  it('an address past its refusals gets 429 for a token this process has not checked yet, and still opens with one it has', async () => {
    const g = await startTestGateway({ redisUrl: redis.get().server.url, sameDataAs: t, overrides: { liveRefusedUpgradesPerAddressPerSecond: 5 } });
    try {
      const known = await mintToken(t, t.layoutId, t.apiKey);
      const first = await attemptLive(g.url, liveProtocols(known), {}, from('127.0.0.3'));
      expect(first.status).toBe(101); // now checked and cached
      first.ws!.close();
      const forged = `${known.slice(0, known.lastIndexOf('.') + 1)}${'A'.repeat(43)}`;
      // one after another: a refusal counts once answered (those under way at once may overshoot)
      const refused = [];
      for (let i = 0; i < 20; i++) refused.push(await attemptLive(g.url, liveProtocols(forged), {}, from('127.0.0.3')));
      const statuses = refused.map((r) => r.status);
      expect(statuses.filter((s) => s === 401).length).toBeGreaterThanOrEqual(10); // its burst: twice the rate
      expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(11); // and what refilled meanwhile
      expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(9);
      const late = refused.find((r) => r.status === 429)!;
      expect(JSON.parse(late.body!).error.code).toBe('rate_limited');
      expect(Number(late.retryAfter)).toBeGreaterThanOrEqual(1);
      const fresh = await mintToken(t, t.layoutId, t.apiKey);
      expect((await attemptLive(g.url, liveProtocols(fresh), {}, from('127.0.0.3'))).status).toBe(429); // would need a verify
      const again = await attemptLive(g.url, liveProtocols(known), {}, from('127.0.0.3'));
      expect(again.status).toBe(101);
      again.ws!.close();
      const elsewhere = await attemptLive(g.url, liveProtocols(fresh), {}, from('127.0.0.4'));
      expect(elsewhere.status).toBe(101);
      elsewhere.ws!.close();
    } finally {
      await g.close();
    }
  });
});

describe('a client that leaves before its actions are answered', () => {
  it('is not written to once gone: nothing logs an error, and the gateway keeps serving', async () => {
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk: Buffer, _e, done) => (lines.push(...chunk.toString().split('\n').filter(Boolean)), done()) });
    const g = await startTestGateway({ redisUrl: redis.get().server.url, sameDataAs: t, log: pino({ level: 'info' }, sink) });
    try {
      const token = await mintToken(t, t.layoutId, t.apiKey);
      
      for (let round = 0; round < 5; round++) {
        const ws = new WebSocket(liveUrl(g.url), liveProtocols(token));
        await new Promise<void>((r) => ws.once('message', () => r())); // the page
        for (let i = 0; i < 5; i++) ws.send(JSON.stringify({ op: 'action', ref: `gone-${i}`, lid: 5, type: 'String', value: `left ${round}-${i}` }));
        ws.terminate(); // the acks are still to come
      }
      await new Promise((r) => setTimeout(r, 300));
      expect(lines.filter((l) => /"level":(50|60)/.test(l))).toEqual([]);
      const ws = new WebSocket(liveUrl(g.url), liveProtocols(token));
      const frames: Frame[] = [];
      ws.on('message', (data: Buffer) => frames.push(JSON.parse(data.toString('utf8')) as Frame));
      await new Promise<void>((r) => ws.once('open', () => r()));
      ws.send(JSON.stringify({ op: 'action', ref: 'still-here', lid: 1, type: 'Button' }));
      await eventually(() => frames.some((f) => f.op === 'ack' && f.ref === 'still-here'));
      ws.close();
    } finally {
      await g.close();
    }
  });
});

describe('a gateway that stops', () => {
  it('stops listening first, then closes its sockets with 1012 spread over LIVE_DRAIN_MS, each with when to come back ({"retryAfterMs"} within its step)', async () => {
    const other = await startTestGateway({ redisUrl: redis.get().server.url, sameDataAs: t, overrides: { liveDrainMs: 1000 } });
    const token = await mintToken(t, t.layoutId, t.apiKey);
    const sockets = await Promise.all(
      Array.from({ length: 40 }, async () => {
        const ws = new WebSocket(liveUrl(other.url), liveProtocols(token));
        const closed = new Promise<{ code: number; reason: string; at: number }>((r) => ws.once('close', (code, reason) => r({ code, reason: String(reason), at: Date.now() })));
        await new Promise<void>((r) => ws.once('open', () => r()));
        return { closed }; // wrapped: an async function returning the promise itself would wait for the close
      }),
    );
    const stopping = other.close();
    await sockets[0]!.closed; // draining: the port no longer takes a connection
    expect(await fetch(`${other.url}/openapi.json`).then(() => 'answered', () => 'refused')).toBe('refused');
    await stopping;
    const closes = await Promise.all(sockets.map((x) => x.closed));
    expect(new Set(closes.map((c) => c.code))).toEqual(new Set([CLOSE.serviceRestart]));
    for (const c of closes) {
      const back = retryAfterOf(c.reason);
      expect(back, c.reason).not.toBeNull();
      expect(back!).toBeGreaterThanOrEqual(0);
      expect(back!).toBeLessThan(50); // one step of the drain
    }
    const times = closes.map((c) => c.at).sort((a, b) => a - b);
    const spread = times.at(-1)! - times[0]!;
    console.log(`figure: 40 sockets closed over ${spread} ms`);
    expect(spread).toBeGreaterThanOrEqual(600);
    expect(spread).toBeLessThan(2000);
  });
});
