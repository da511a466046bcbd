// What the crowd writes on the wall: every String loses its control, bidi and zero-width characters
// before it is stored; a `filter` control refuses what matches its lists, links, email addresses
// and phone numbers with 400 moderated (an error frame on the live channel), counted by reason; a
// `hold` control answers held and queues the text until a moderator approves it (then it plays,
// once, as oscdump sees it) or rejects it (it never plays); a muted participant's Strings are
// refused. Discovery and the page frame show each control's mode, never its lists.
import type { Bridge } from '../../bridge/app.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeActionEntry } from '../../schemas/action-entry.js';
import type { LayoutDefinition } from '../../schemas/types.js';
import { signIn, type AdminClient } from '../helpers/admin.js';
import { startTestBridge } from '../helpers/bridge.js';
import { audiencectlJson } from '../helpers/cli.js';
import { eventually, getLayout, mintToken, postAction, postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { connectLive, liveUrl } from '../helpers/live.js';
import { LiveClient } from '../../client/live-client.js';
import WebSocket from 'ws';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { sample, scrape } from '../helpers/metrics.js';
import { startOscdump, type Oscdump } from '../helpers/oscdump.js';
import { useRedis } from '../helpers/redis.js';
import { PARTICIPANT_MEMORY_MS } from '../../gateway/store/layouts.js';

const MODERATED_LAYOUT: LayoutDefinition = {
  layoutId: 'wall',
  name: 'The wall',
  activePageId: 'main',
  pages: [
    {
      pageId: 'main',
      name: 'Main',
      controls: [
        { lid: 1, address: '/001', type: 'String', props: { label: 'Open' }, moderation: { mode: 'open', maxLength: 20 } },
        {
          lid: 2, address: '/002', type: 'String', props: { label: 'Filtered' },
          moderation: { mode: 'filter', maxLength: 140, blocklist: ['banana', 'Rival FC'], allow: ['dick'], block: ['urls', 'emails', 'phones'], languages: ['en', 'de'] },
        },
        { lid: 3, address: '/003', type: 'String', props: { label: 'Held' }, moderation: { mode: 'hold', maxLength: 140, block: ['urls'] } },
        { lid: 4, address: '/004', type: 'String', props: { label: 'Plain' } },
      ],
    },
  ],
};

const redis = useRedis();
let t: TestGateway;
let bridge: Bridge;
let dump: Oscdump;
let admin: AdminClient;
let token: string;
const logLines: string[] = [];

beforeAll(async () => {
  const sink = new Writable({ write: (chunk: Buffer, _e, done) => (logLines.push(...chunk.toString().split('\n').filter(Boolean)), done()) });
  t = await startTestGateway({ redisUrl: redis.get().server.url, layout: MODERATED_LAYOUT, log: pino({ level: 'info' }, sink), overrides: { moderationQueuePerParticipant: 3, moderationQueueMax: 5 } });
  token = await mintToken(t, t.layoutId, t.apiKey);
  dump = await startOscdump();
  ({ bridge } = await startTestBridge({ redisUrl: redis.get().server.url, prefix: t.config.redisPrefix, layouts: [{ layoutId: t.layoutId, playoutDelayMs: 0, targets: [{ host: '127.0.0.1', port: dump.port }] }] }));
  await t.admin.admins.create(t.teamId, 'mod@team.example', 'correct horse battery staple');
  admin = await signIn(t, 'mod@team.example', 'correct horse battery staple');
});
afterAll(async () => {
  await bridge?.stop();
  dump?.child.kill('SIGKILL');
  await t?.close();
});

const say = (lid: number, value: string, tok = token, headers: Record<string, string> = {}) => postAction(t, tok, { layoutId: t.layoutId, lid, type: 'String', value }, headers);
const stored = async () => (await redis.get().client.xrange(t.gw.stores.keys.actions(t.layoutId), '-', '+')).map(([, f]) => decodeActionEntry(f)).flatMap((d) => (d.ok ? [d.entry] : []));
const shown = (text: string) => dump.lines.filter((l) => l.raw.includes(JSON.stringify(text))).length;
const queue = async () => (await admin.req('GET', `/admin/api/layouts/${t.layoutId}/moderation`)).body as { queue: { id: string; sub: string; text: string; label: string }[]; decided: { id: string; decision: string; by: string }[] };
const refused = async (reason: string) => sample(await scrape(t.gw.opsPort), `audience_gateway_moderation_refused_total{reason="${reason}"}`) || 0;

describe('every String, in every mode', () => {
  it('loses its C0 and C1 controls, bidi overrides and zero-width characters before it is stored; line breaks become spaces', async () => {
    const sent = 'a\u202Eb\u200Bc\u0007d\u0085e\nf\u2066g\u200Dh\uFEFFi\u009Bj';
    for (const lid of [1, 4]) expect((await say(lid, sent)).body).toEqual({ success: true });
    const values = (await stored()).filter((e) => e.lid === 1 || e.lid === 4).map((e) => e.value);
    expect(values).toEqual(['abcd e fghij', 'abcd e fghij']);
    await eventually(() => shown('abcd e fghij') === 2);
  });

  it('maxLength counts code points after cleaning: a longer text is refused as moderated, even in open mode', async () => {
    expect((await say(1, '😀'.repeat(20))).status).toBe(200);
    const r = await say(1, 'x'.repeat(21));
    expect([r.status, r.body.error.code]).toEqual([400, 'moderated']);
    expect(r.body.error.message).toContain('too_long');
    expect((await say(1, `${'y'.repeat(20)}\u200B\u200B`)).status).toBe(200); // invisible characters do not count
  });
});

describe('filter', () => {
  it.each([
    ['profanity', 'you are shit'],
    ['profanity', 'sh1tty band'],
    ['profanity', 'f u c k this'],
    ['profanity', 'f.u.c.k'],
    ['profanity', 'FUUUUCK'],
    ['profanity', 'ｆｕｃｋ'],
    ['profanity', 'fu\u200Bck'],
    ['profanity', 'du Arschloch'],
    ['blocklist', 'b.a.n.a.n.a'],
    ['blocklist', 'Banana is great'],
    ['blocklist', 'go rival fc'],
    ['url', 'visit example.com now'],
    ['url', 'https://x.test/a'],
    ['email', 'mail me: someone@example.org'],
    ['phone', 'call +44 20 7946 0958'],
    ['phone', '(555) 123-4567'],
  ])('refuses %s: %j with 400 moderated, stores nothing and counts it by reason', async (reason, text) => {
    const before = (await stored()).length;
    const counted = await refused(reason);
    const r = await say(2, text);
    expect([r.status, r.body.error.code]).toEqual([400, 'moderated']);
    expect(r.body.error.message).toContain(`(${reason})`);
    expect((await stored()).length).toBe(before);
    expect(await refused(reason)).toBe(counted + 1);
  });

  it('lets through clean text, words the layout allows, and names that only contain a listed word', async () => {
    for (const text of ['Philip K. Dick night', 'Scunthorpe rocks', 'classic assessment', 'see you at 9', 'Grüße aus Köln', 'vamos! 🎉']) {
      expect((await say(2, text)).body).toEqual({ success: true });
    }
    await eventually(() => shown('Grüße aus Köln') === 1);
  });

  it('logs refusals at most once per reason and interval, however many come', async () => {
    const before = logLines.length;
    const answers = await Promise.all(Array.from({ length: 200 }, () => say(2, 'visit example.com')));
    expect(answers.every((a) => a.status === 400)).toBe(true);
    const said = logLines.slice(before).filter((l) => l.includes('refused by moderation') && (JSON.parse(l) as { kind: string }).kind === 'url');
    expect(said.length).toBeLessThanOrEqual(2); // at once if it is the interval's first refusal, else summed when the interval ends
    // and refusals are logged: the first of the run at once (with its reason)
    expect(logLines.some((l) => l.includes('refused by moderation') && (JSON.parse(l) as { kind: string; count: number }).count >= 1)).toBe(true);
  });

  it('is answered with an error frame, code moderated, on the live channel', async () => {
    const live = await connectLive(t.url, token);
    live.send({ op: 'action', ref: 'r1', lid: 2, type: 'String', value: 'sh1t' });
    const e = await live.next('error', 1);
    expect([e.ref, (e.error as { code: string }).code]).toEqual(['r1', 'moderated']);
    live.ws.close();
  });
});

describe('hold', () => {
  it('answers held (POST /action and the live ack), appends nothing, and queues the text for the moderators', async () => {
    const r = await say(3, 'hello from row 12');
    expect(r.body).toEqual({ success: true, held: true });
    const live = await connectLive(t.url, token);
    live.send({ op: 'action', ref: 'h1', lid: 3, type: 'String', value: 'second from row 12' });
    const ack = await live.next('ack', 1);
    expect(ack).toEqual({ op: 'ack', ref: 'h1', held: true });
    live.ws.close();
    expect((await stored()).some((e) => e.lid === 3)).toBe(false);
    const q = await queue();
    expect(q.queue.map((i) => [i.text, i.label])).toEqual([['hello from row 12', 'Held'], ['second from row 12', 'Held']]);
  });

  it('the live client library resolves a held text as held, and rejects a refused one as moderated', async () => {
    const live = new LiveClient({ url: liveUrl(t.url), token, WebSocket });
    try {
      expect(await live.send({ lid: 3, type: 'String', value: 'via the client library' })).toEqual({ held: true });
      expect(await live.send({ lid: 4, type: 'String', value: 'plain' })).toEqual({ held: false });
      await expect(live.send({ lid: 2, type: 'String', value: 'sh1t' })).rejects.toMatchObject({ code: 'moderated' });
    } finally {
      live.stop();
    }
    const q = await queue();
    for (const i of q.queue.filter((x) => x.text === 'via the client library')) await admin.req('POST', `/admin/api/layouts/${t.layoutId}/moderation/${i.id}/reject`);
  });

  it('still refuses what its lists refuse (a link), before holding it', async () => {
    const r = await say(3, 'go to example.com');
    expect([r.status, r.body.error.code]).toEqual([400, 'moderated']);
  });

  it('an approved text plays once, at approval; a second approval (another operator) changes nothing; a rejected one never plays', async () => {
    const q = await queue();
    const [a, b] = [q.queue.find((i) => i.text === 'hello from row 12')!, q.queue.find((i) => i.text === 'second from row 12')!];
    const [first, second] = await Promise.all([admin.req('POST', `/admin/api/layouts/${t.layoutId}/moderation/${a.id}/approve`), admin.req('POST', `/admin/api/layouts/${t.layoutId}/moderation/${a.id}/approve`)]);
    expect([first.body.first, second.body.first].sort()).toEqual([false, true]);
    expect(second.body.by).toBe('admin:mod@team.example');
    const rejected = await admin.req('POST', `/admin/api/layouts/${t.layoutId}/moderation/${b.id}/reject`);
    expect(rejected.body).toMatchObject({ first: true, decision: 'reject' });
    const late = await admin.req('POST', `/admin/api/layouts/${t.layoutId}/moderation/${b.id}/approve`);
    expect(late.body).toMatchObject({ first: false, decision: 'reject' });
    await eventually(() => shown('hello from row 12') === 1);
    await new Promise((r) => setTimeout(r, 500));
    expect(shown('hello from row 12')).toBe(1);
    expect(shown('second from row 12')).toBe(0);
    const entry = (await stored()).find((e) => e.value === 'hello from row 12')!;
    expect(entry).toMatchObject({ lid: 3, address: '/003', type: 'String' });
    const after = await queue();
    expect(after.queue).toEqual([]);
    expect(after.decided.slice(0, 2).map((d) => d.decision)).toEqual(['reject', 'approve']);
  });

  it('keeps each participant to its share (its own oldest go) and the queue to its bound (a new text past it is refused, 429), counted', async () => {
    const other = await mintToken(t, t.layoutId, t.apiKey);
    for (const n of [1, 2, 3, 4]) expect((await say(3, `mine ${n}`)).body).toEqual({ success: true, held: true });
    expect((await queue()).queue.map((i) => i.text)).toEqual(['mine 2', 'mine 3', 'mine 4']);
    for (const n of [1, 2]) expect((await say(3, `theirs ${n}`, other)).body).toEqual({ success: true, held: true });
    const full = await say(3, 'theirs 3', other);
    expect([full.status, full.body.error?.code]).toEqual([429, 'rate_limited']);
    expect(Number(full.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(full.body.error.message).toMatch(/moderation queue .* is full/);
    expect((await queue()).queue.map((i) => i.text)).toEqual(['mine 2', 'mine 3', 'mine 4', 'theirs 1', 'theirs 2']);
    // a participant at its share in a full queue replaces its own oldest: nobody else's text goes
    expect((await say(3, 'mine 5')).body).toEqual({ success: true, held: true });
    expect((await queue()).queue.map((i) => i.text)).toEqual(['mine 3', 'mine 4', 'theirs 1', 'theirs 2', 'mine 5']);
    const m = await scrape(t.gw.opsPort);
    expect(sample(m, 'audience_gateway_moderation_dropped_total{reason="participant"}')).toBe(2);
    expect(sample(m, 'audience_gateway_moderation_dropped_total{reason="full"}')).toBe(1);
  });

  it('a flood of fresh participants, each within its share, cannot push out a text already held', async () => {
    const g = await startTestGateway({ redisUrl: redis.get().server.url, layout: MODERATED_LAYOUT, overrides: { moderationQueuePerParticipant: 3, moderationQueueMax: 20 } });
    try {
      const send = (tok: string, value: string) => postAction(g, tok, { layoutId: g.layoutId, lid: 3, type: 'String', value });
      const honest = await mintToken(g, g.layoutId, g.apiKey);
      expect((await send(honest, 'the one to read')).body).toEqual({ success: true, held: true });
      const flood = await Promise.all(Array.from({ length: 40 }, () => mintToken(g, g.layoutId, g.apiKey)));
      const answers = await Promise.all(flood.flatMap((tok) => [1, 2, 3].map((n) => send(tok, `flood ${n}`))));
      expect(answers.filter((a) => a.status === 200).length).toBe(19);
      expect(answers.filter((a) => a.status === 429).length).toBe(40 * 3 - 19);
      const listed = await g.gw.stores.moderation.list(g.layoutId, 900_000, Date.now());
      expect(listed.queue[0]!.text).toBe('the one to read');
      expect(listed.queue).toHaveLength(20);
    } finally {
      await g.close();
    }
  });

  it('a held text past the hold time expires: out of the list, counted, and no longer decidable', async () => {
    const store = t.gw.stores.moderation;
    const bounds = { perLayout: 100, perParticipant: 10, holdMs: 300 };
    const item = (id: string, heldAt: number) => ({ id, layoutId: 'expiry-show', sub: 'aud_x', lid: 3, address: '/003', text: id, heldAt, exp: heldAt + 60_000 });
    const now = Date.now();
    expect((await store.hold(item('old', now), bounds)).expired).toBe(0);
    expect((await store.list('expiry-show', bounds.holdMs, now + 100)).queue.map((i) => i.id)).toEqual(['old']);
    expect((await store.list('expiry-show', bounds.holdMs, now + 400)).queue).toEqual([]);
    expect(await store.hold(item('new', now + 400), bounds)).toEqual({ added: true, expired: 1, droppedParticipant: 0, refusedFull: false });
    await expect(store.decide('expiry-show', 'old', 'approve', 'test', { maxLen: 1000, retentionMs: 60_000 })).rejects.toMatchObject({ code: 'item_not_found' });
  });

  it('the same Idempotency-Key queues a text once', async () => {
    const env = { REDIS_URL: redis.get().server.url, REDIS_PREFIX: t.config.redisPrefix };
    for (const { id } of (await queue()).queue) await audiencectlJson(env, 'moderation', 'reject', t.layoutId, id);
    const third = await mintToken(t, t.layoutId, t.apiKey);
    for (let i = 0; i < 3; i++) expect((await say(3, 'retry me', third, { 'idempotency-key': 'k-1' })).body).toEqual({ success: true, held: true });
    expect((await queue()).queue.map((i) => i.text)).toEqual(['retry me']);
  });
});

describe('muting and audiencectl', () => {
  it('moderation list, approve and reject from a shell; a muted participant is refused, past its token\'s exp', async () => {
    const env = { REDIS_URL: redis.get().server.url, REDIS_PREFIX: t.config.redisPrefix };
    const troll = await mintToken(t, t.layoutId, t.apiKey);
    await say(3, 'troll text one', troll);
    await say(3, 'troll text two', troll);
    const listed = await audiencectlJson(env, 'moderation', 'list', t.layoutId);
    const mine = (listed.queue as { id: string; sub: string; text: string }[]).filter((i) => i.text.startsWith('troll text'));
    expect(mine).toHaveLength(2);
    const approved = await audiencectlJson(env, 'moderation', 'approve', t.layoutId, mine[0]!.id, '--by', 'stage-manager');
    expect(approved).toMatchObject({ first: true, decision: 'approve', by: 'cli:stage-manager' });
    await eventually(() => shown('troll text one') === 1);
    const muted = await audiencectlJson(env, 'moderation', 'mute', t.layoutId, '--sub', mine[1]!.sub);
    expect(muted.rejected).toBe(1);
    // as long as a participant can act at all (a token's longest life and renewal grace), not its token's exp
    expect(Math.abs(Date.parse(muted.mutedUntil) - Date.now() - PARTICIPANT_MEMORY_MS)).toBeLessThan(60_000);
    await eventually(async () => (await say(4, 'still me', troll)).status === 400);
    const r = await say(2, 'hello', troll);
    expect([r.status, r.body.error.code]).toEqual([400, 'moderated']);
    expect(r.body.error.message).toContain('(muted)');
    expect((await say(3, 'hello', token)).body).toEqual({ success: true, held: true }); // others are not muted
    expect(shown('troll text two')).toBe(0);
  });

  it('the team page mutes from a held text: the participant\'s other held texts go too', async () => {
    const troll = await mintToken(t, t.layoutId, t.apiKey);
    await say(3, 'abuse one', troll);
    await say(3, 'abuse two', troll);
    const item = (await queue()).queue.find((i) => i.text === 'abuse one')!;
    const r = await admin.req('POST', `/admin/api/layouts/${t.layoutId}/moderation/${item.id}/mute`);
    expect(r.body).toMatchObject({ first: true, decision: 'mute' });
    expect((await queue()).queue.some((i) => i.text.startsWith('abuse'))).toBe(false);
    await eventually(async () => (await say(3, 'abuse three', troll)).status === 400);
  });
});

describe('a mute holds for the participant, not its token', () => {
  it('mutes a participant with no held text from a shell, holds through a renewal past the old token\'s exp, and ends with unmute', async () => {
    let ahead = 0;
    const g = await startTestGateway({ redisUrl: redis.get().server.url, sameDataAs: t, now: () => Date.now() + ahead, overrides: { tokenTtlSeconds: 60 } });
    try {
      // the shell's tokens live as long as this gateway's: a mute tied to a token would end in 60 s
      const env = { REDIS_URL: redis.get().server.url, REDIS_PREFIX: t.config.redisPrefix, TOKEN_TTL_SECONDS: '60' };
      const quiet = await mintToken(g, t.layoutId, t.apiKey);
      const loud = await mintToken(g, t.layoutId, t.apiKey);
      const subOf = (tok: string) => JSON.parse(Buffer.from(tok.split('.')[1]!, 'base64url').toString()).sub as string;
      const muted = await audiencectlJson(env, 'moderation', 'mute', t.layoutId, '--sub', subOf(quiet)); // nothing of theirs held
      expect(muted.rejected).toBe(0);
      await postAction(g, loud, { layoutId: t.layoutId, lid: 3, type: 'String', value: 'loud one' });
      const item = (await queue()).queue.find((i) => i.text === 'loud one')!;
      expect((await admin.req('POST', `/admin/api/layouts/${t.layoutId}/moderation/${item.id}/mute`)).body).toMatchObject({ first: true });
      const sayOn = (tok: string, value: string) => postAction(g, tok, { layoutId: t.layoutId, lid: 4, type: 'String', value });
      await eventually(async () => (await sayOn(quiet, 'x')).status === 400 && (await sayOn(loud, 'x')).status === 400);
      ahead += 30_000;
      const renew = async (old: string) => (await postJson(`${g.url}/token`, { layoutId: t.layoutId, renew: old }, { 'x-api-key': t.apiKey })).body.token as string;
      const [quiet2, loud2] = [await renew(quiet), await renew(loud)];
      ahead += 40_000; // both first tokens have expired; the renewed ones have 20 s left
      for (const tok of [quiet2, loud2]) {
        const r = await sayOn(tok, 'after renewal');
        expect([r.status, r.body.error?.code, r.body.error?.message]).toEqual([400, 'moderated', expect.stringContaining('(muted)')]);
      }
      const unmuted = await audiencectlJson(env, 'moderation', 'unmute', t.layoutId, '--sub', subOf(quiet), '--by', 'stage-manager');
      expect(unmuted).toMatchObject({ layoutId: t.layoutId, sub: subOf(quiet), wasMuted: true });
      await eventually(async () => (await sayOn(quiet2, 'back again')).status === 200);
      expect((await sayOn(loud2, 'still muted')).status).toBe(400);
      const r = await admin.req('POST', `/admin/api/layouts/${t.layoutId}/unmute`, { sub: subOf(loud) });
      expect(r.body).toMatchObject({ sub: subOf(loud), wasMuted: true });
      await eventually(async () => (await sayOn(loud2, 'back too')).status === 200);
    } finally {
      await g.close();
    }
  });
});

describe('what apps see of a policy', () => {
  it('discovery and the page frame show each control\'s mode and length, never its lists', async () => {
    const d = await getLayout(t, t.layoutId, t.apiKey);
    const modes = (d.body.controls as { lid: number; moderation?: unknown }[]).map((c) => [c.lid, c.moderation ?? null]);
    expect(modes).toEqual([[1, { mode: 'open', maxLength: 20 }], [2, { mode: 'filter', maxLength: 140 }], [3, { mode: 'hold', maxLength: 140 }], [4, null]]);
    const live = await connectLive(t.url, token);
    const page = live.frames[0]!;
    expect((page.controls as { moderation?: unknown }[]).map((c) => c.moderation ?? null)).toEqual(modes.map(([, m]) => m));
    live.ws.close();
  });

  it('the importer refuses a policy on a control that is not a String, naming it', async () => {
    const bad = structuredClone(MODERATED_LAYOUT);
    bad.layoutId = 'wall-bad';
    bad.pages[0]!.controls.push({ lid: 9, address: '/009', type: 'Slider', props: { label: 'S' }, moderation: { mode: 'hold' } });
    await expect(t.admin.layouts.import(t.teamId, bad)).rejects.toThrow(/controls\[4\].*moderation is for String controls only/);
  });
});
