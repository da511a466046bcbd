// The show record, played through real processes: an audience-gateway, an audience-bridge under
// its own Redis user (audiencectl bridge grant) feeding liblo's oscdump, and audiencectl. A show
// runs (votes to a cue, a page switch from the team page's API, held texts approved, rejected and
// muted from the shell and the page) and the record it leaves, exported by `audiencectl show
// export` and downloaded from the team page, says what the displays received (oscdump) and what
// the operators did. The record stays within its byte bound and its retention.
import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStores } from '../../gateway/store/stores.js';
import type { LayoutDefinition } from '../../schemas/types.js';
import { signIn, type AdminClient } from '../helpers/admin.js';
import { configFile, spawnBridge, stopProcess } from '../helpers/bridge.js';
import { audiencectl, audiencectlJson } from '../helpers/cli.js';
import { spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { eventually, mintToken, postAction } from '../helpers/gateway.js';
import { startOscdump, type Oscdump } from '../helpers/oscdump.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';

const LAYOUT: LayoutDefinition = {
  layoutId: 'recorded-show',
  name: 'Recorded show',
  activePageId: 'vote',
  pages: [
    {
      pageId: 'vote',
      name: 'Vote',
      controls: [
        { lid: 4, address: '/004', type: 'Index', props: { label: 'Colour' }, options: [{ index: 0, label: 'Red' }, { index: 1, label: 'Green' }, { index: 2, label: 'Blue' }], aggregate: { mode: 'votes', windowMs: 600_000, cue: { quorum: 4, share: 0.6 } } },
        { lid: 2, address: '/002', type: 'Slider', props: { label: 'Heat' }, aggregate: { mode: 'mean', windowMs: 600_000 } },
        { lid: 5, address: '/005', type: 'String', props: { label: 'Shout-out' }, moderation: { mode: 'hold', maxLength: 140 } },
      ],
    },
    { pageId: 'encore', name: 'Encore', controls: [{ lid: 6, address: '/006', type: 'String', props: { label: 'Encore wish' }, moderation: { mode: 'hold', maxLength: 140 } }] },
  ],
};

const redis = useRedis();
const prefix = randomPrefix();
const bridgeId = `rec-${Math.random().toString(36).slice(2, 8)}`;
const children: ChildProcess[] = [];
let gateway: GatewayProcess;
let dump: Oscdump;
let apiKey: string;
let admin: AdminClient;
const env = () => ({ REDIS_URL: redis.get().server.url, REDIS_PREFIX: prefix });

beforeAll(async () => {
  const plain = new Redis(redis.get().server.url);
  const stores = createStores(plain, prefix);
  const team = await stores.teams.create('Recorded');
  await stores.layouts.import(team.teamId, LAYOUT);
  apiKey = (await stores.apiKeys.create(team.teamId, { name: 'backend' })).apiKey;
  await stores.admins.create(team.teamId, 'producer@team.example', 'stage-door-1234');
  plain.disconnect();
  gateway = await spawnGateway(env());
  children.push(gateway.child);
  dump = await startOscdump();
  const grant = await audiencectlJson(env(), 'bridge', 'grant', '--bridge-id', bridgeId, '--layout', LAYOUT.layoutId);
  const file = configFile({ redisUrl: grant.redisUrl as string, prefix, bridgeId, layouts: [{ layoutId: LAYOUT.layoutId, tickHz: 100, targets: [{ host: '127.0.0.1', port: dump.port }] }] });
  children.push((await spawnBridge(['--config', file], { LOG_LEVEL: 'info' })).child);
  admin = await signIn(gateway, 'producer@team.example', 'stage-door-1234');
}, 30_000);
afterAll(async () => {
  for (const c of children) await stopProcess(c, 'SIGKILL');
  dump?.child.kill('SIGKILL');
  await audiencectl(env(), 'bridge', 'revoke', '--bridge-id', bridgeId);
});

const shownText = (raw: string) => raw.slice(raw.indexOf('"') + 1, raw.lastIndexOf('"'));
const act = (token: string, body: object) => postAction(gateway, token, { layoutId: LAYOUT.layoutId, ...body });

/** One CSV line's cells (RFC 4180 quoting). */
function cells(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quoted && c === '"' && line[i + 1] === '"') {
      cur += '"';
      i++;
    } else if (c === '"') {
      quoted = !quoted;
    } else if (c === ',' && !quoted) {
      out.push(cur);
      cur = '';
    } else {
      cur += c;
    }
  }
  out.push(cur);
  return out;
}

describe('the show record', () => {
  it('says what the displays received and what the operators did', { timeout: 60_000 }, async () => {
    const started = new Date().toISOString();
    // the crowd votes: 3 Green, 1 Blue; the cue fires Green
    const voters = await Promise.all(Array.from({ length: 4 }, () => mintToken(gateway, LAYOUT.layoutId, apiKey)));
    for (const [i, token] of voters.entries()) {
      expect((await act(token, { lid: 4, type: 'Index', value: i === 3 ? 2 : 1 })).status).toBe(200);
      expect((await act(token, { lid: 2, type: 'Slider', value: 0.5 })).status).toBe(200);
    }
    await eventually(() => dump.lines.some((l) => l.address === '/004/cue'), 10_000);
    const cueOsc = dump.lines.find((l) => l.address === '/004/cue')!;
    // held texts: one approved from the page, one rejected from the shell, one sender muted
    const fan = voters[0]!;
    const troll = voters[1]!;
    for (const text of ['Hello, "Leeds"!', '=HYPERLINK("x")', 'not this one']) expect((await act(fan, { lid: 5, type: 'String', value: text })).body.held).toBe(true);
    expect((await act(troll, { lid: 5, type: 'String', value: 'spam' })).body.held).toBe(true);
    const queue = (await admin.req('GET', `/admin/api/layouts/${LAYOUT.layoutId}/moderation`)).body.queue as { id: string; text: string; sub: string }[];
    const id = (text: string) => queue.find((q) => q.text === text)!.id;
    expect((await admin.req('POST', `/admin/api/layouts/${LAYOUT.layoutId}/moderation/${id('Hello, "Leeds"!')}/approve`)).status).toBe(200);
    expect((await admin.req('POST', `/admin/api/layouts/${LAYOUT.layoutId}/moderation/${id('=HYPERLINK("x")')}/approve`)).status).toBe(200);
    await audiencectlJson(env(), 'moderation', 'reject', LAYOUT.layoutId, id('not this one'), '--by', 'stage-left');
    await audiencectlJson(env(), 'moderation', 'mute', LAYOUT.layoutId, '--sub', queue.find((q) => q.text === 'spam')!.sub, '--by', 'stage-left');
    await eventually(() => dump.lines.filter((l) => l.address === '/005').length >= 2);
    // the crowd samples reach the record (sampled once a second); then the page switches
    type RecordEntry = { kind: string; at: string; [k: string]: unknown };
    const exportRecord = () => audiencectlJson(env(), 'show', 'export', LAYOUT.layoutId, '--from', started, '--format', 'json');
    const sampled = (entries: RecordEntry[], lid: number, value: string) => entries.some((e) => e.kind === 'crowd' && e.lid === lid && JSON.stringify(e.value) === value && e.n === 4);
    await eventually(async () => {
      const entries = (await exportRecord()).entries as RecordEntry[];
      return sampled(entries, 4, '[0,3,1]') && sampled(entries, 2, '[0.5]');
    });
    expect((await admin.req('POST', `/admin/api/layouts/${LAYOUT.layoutId}/activate`, { pageId: 'encore' })).status).toBe(200);

    const record = await exportRecord();
    const entries = record.entries as RecordEntry[];
    // the cue: once, as the display got it, with the tally and n at firing
    const cues = entries.filter((e) => e.kind === 'cue');
    expect(cues).toHaveLength(1);
    expect(cues[0]).toMatchObject({ lid: 4, value: cueOsc.values[0], crowd: [0, 3, 1], n: 4, by: bridgeId });
    expect(Math.abs(Date.parse(cues[0]!.at) - cueOsc.at)).toBeLessThan(1000);
    // what the moderators did, by whom, in order; what was approved is what was shown
    const decisions = entries.filter((e) => e.kind === 'moderation').map((e) => [e.decision, e.text, e.by]);
    expect(decisions).toEqual([
      ['approve', 'Hello, "Leeds"!', 'admin:producer@team.example'],
      ['approve', '=HYPERLINK("x")', 'admin:producer@team.example'],
      ['reject', 'not this one', 'cli:stage-left'],
      ['mute', 'spam', 'cli:stage-left'],
    ]);
    const shown = dump.lines.filter((l) => l.address === '/005').map((l) => shownText(l.raw));
    expect(shown).toEqual(decisions.filter(([d]) => d === 'approve').map(([, text]) => text));
    // the crowd, sampled while it changed; the page switch with the values of the page it left
    expect(sampled(entries, 4, '[0,3,1]')).toBe(true);
    expect(sampled(entries, 2, '[0.5]')).toBe(true);
    const pages = entries.filter((e) => e.kind === 'page');
    expect(pages).toHaveLength(1);
    expect(pages[0]).toMatchObject({ from: 'vote', to: 'encore', by: 'admin:producer@team.example' });
    expect(pages[0]!.values).toEqual([{ lid: 4, value: [0, 3, 1], n: 4 }, { lid: 2, value: [0.5], n: 4 }]);
    // in time order
    expect(entries.map((e) => e.at)).toEqual([...entries.map((e) => e.at)].sort());

    // the CSV export: the same entries, quoted as RFC 4180 says, formulas made text; the team page's download is the same file
    const csv = (await audiencectl(env(), 'show', 'export', LAYOUT.layoutId, '--from', started, '--format', 'csv')).stdout;
    const lines = csv.trimEnd().split('\r\n');
    expect(lines[0]).toBe('at,kind,by,lid,value,n,crowd,from,to,decision,item,sub,text');
    expect(lines).toHaveLength(entries.length + 1);
    const rows = lines.slice(1).map(cells);
    expect(rows.map((r) => r[1])).toEqual(entries.map((e) => e.kind));
    expect(rows.find((r) => r[1] === 'cue')!.slice(3, 7)).toEqual(['4', String(cueOsc.values[0]), '4', '0 3 1']);
    expect(rows.filter((r) => r[1] === 'moderation').map((r) => r[12])).toEqual(['Hello, "Leeds"!', `'=HYPERLINK("x")`, 'not this one', 'spam']);
    // an entry that is not an entry's JSON (written by hand) is left out and counted, never stops the export
    const plain = new Redis(redis.get().server.url);
    const stream = `${prefix}layout:{${LAYOUT.layoutId}}:record`;
    const junk = (await plain.xadd(stream, '*', 'r', 'not json'))!;
    const again = await audiencectlJson(env(), 'show', 'export', LAYOUT.layoutId, '--from', started, '--format', 'json');
    expect([again.unreadable, again.entries.length]).toEqual([1, entries.length]);
    expect(record.unreadable).toBe(0);
    const download = await fetch(`${gateway.url}/admin/api/layouts/${LAYOUT.layoutId}/record?format=csv&from=${encodeURIComponent(started)}`, { headers: { cookie: admin.cookie } });
    expect(download.headers.get('content-disposition')).toMatch(/^attachment; filename="show-recorded-show-\d{4}-\d{2}-\d{2}\.csv"$/);
    expect(download.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(download.headers.get('x-unreadable-entries')).toBe('1');
    expect(await download.text()).toBe(csv);
    await plain.xdel(stream, junk); // the record's byte count never held it: the next test counts bytes
    plain.disconnect();
  });

  it('keeps within its byte bound, oldest entries first out, and drops what is older than its retention', { timeout: 60_000 }, async () => {
    const plain = new Redis(redis.get().server.url);
    try {
      const bounded = createStores(plain, prefix, null, { retentionMs: 60_000, maxBytes: 65_536 });
      for (let i = 0; i < 700; i++) await bounded.layouts.activate(LAYOUT.layoutId, i % 2 === 0 ? 'vote' : 'encore', `switch-${i}`);
      const key = bounded.keys.showRecord(LAYOUT.layoutId);
      const all = await plain.xrange(key.stream, '-', '+');
      const bytes = all.reduce((sum, [, f]) => sum + Buffer.byteLength(f[1]!), 0);
      expect(bytes).toBeLessThanOrEqual(65_536);
      expect(Number(await plain.hget(key.state, 'bytes'))).toBe(bytes);
      expect((JSON.parse(all[all.length - 1]![1][1]!) as { by: string }).by).toBe('switch-699');
      expect(all.length).toBeLessThan(700);
      expect(await plain.pttl(key.stream)).toBeGreaterThan(55_000);

      const brief = createStores(plain, prefix, null, { retentionMs: 1000, maxBytes: 65_536 });
      await new Promise((r) => setTimeout(r, 1100));
      await brief.layouts.activate(LAYOUT.layoutId, 'vote', 'last');
      const left = await plain.xrange(key.stream, '-', '+');
      expect(left.map(([, f]) => (JSON.parse(f[1]!) as { by: string }).by)).toEqual(['last']);
    } finally {
      plain.disconnect();
    }
  });
});
