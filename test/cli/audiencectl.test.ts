// audiencectl end to end against a real Redis: every command, --json output, and clear non-zero
// exits on bad input, including each rule of the layout definition.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { RedisKeys } from '../../gateway/store/keys.js';
import { audiencectl } from '../helpers/cli.js';
import { DEMO_LAYOUT } from '../helpers/gateway.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';

const redis = useRedis();
const dir = mkdtempSync(join(tmpdir(), 'ac-cli-'));
let env: { REDIS_URL: string; REDIS_PREFIX: string };
const ctl = (...args: string[]) => audiencectl(env, ...args);

function file(name: string, content: unknown): string {
  const p = join(dir, name);
  writeFileSync(p, typeof content === 'string' ? content : JSON.stringify(content));
  return p;
}

let team: string;
beforeAll(async () => {
  env = { REDIS_URL: redis.get().server.url, REDIS_PREFIX: randomPrefix() };
  const r = await ctl('team', 'create', '--name', 'Acme', '--json');
  expect(r.code).toBe(0);
  team = r.json.teamId;
  expect(team).toMatch(/^team_[0-9a-f]{12}$/);
});

describe('team and layout commands', () => {
  it('imports, lists, shows and activates a layout', async () => {
    const imported = await ctl('layout', 'import', '--team', team, file('demo.json', DEMO_LAYOUT), '--json');
    expect(imported.code).toBe(0);
    expect(imported.json).toEqual({ layoutId: 'demo-show', replaced: false });
    const list = await ctl('layout', 'list', '--team', team, '--json');
    expect(list.json.layouts).toEqual([{ layoutId: 'demo-show', name: 'Demo show', activePageId: 'main', pages: ['main', 'encore'] }]);
    const act = await ctl('layout', 'activate', 'demo-show', 'encore', '--json');
    expect(act.json).toEqual({ layoutId: 'demo-show', activePageId: 'encore' });
    const show = await ctl('layout', 'show', 'demo-show', '--json');
    expect(show.json.activePageId).toBe('encore');
    expect(show.json.pages).toHaveLength(2);
    const human = await ctl('layout', 'show', 'demo-show');
    expect(human.stdout).toContain('page encore (active)');
  });

  it('replaces a layout of the same team and refuses one owned by another team', async () => {
    const again = await ctl('layout', 'import', '--team', team, file('demo2.json', { ...DEMO_LAYOUT, name: 'Renamed' }), '--json');
    expect(again.json).toEqual({ layoutId: 'demo-show', replaced: true });
    const other = (await ctl('team', 'create', '--name', 'Rival', '--json')).json.teamId as string;
    const stolen = await ctl('layout', 'import', '--team', other, file('steal.json', DEMO_LAYOUT), '--json');
    expect(stolen.code).not.toBe(0);
    expect(stolen.json.error.code).toBe('layout_owned_by_other_team');
    expect((await ctl('layout', 'show', 'demo-show', '--json')).json.name).toBe('Renamed');
  });

  it.each([
    ['a page switch to an unknown page', ['layout', 'activate', 'demo-show', 'nope'], 'page_not_found'],
    ['an unknown layout', ['layout', 'show', 'nope'], 'layout_not_found'],
    ['an unknown team', ['layout', 'list', '--team', 'team_000000000000'], 'team_not_found'],
    ['an empty team name', ['team', 'create', '--name', '  '], 'invalid_argument'],
    ['a missing option', ['key', 'create'], 'invalid_argument'],
    ['an unknown command', ['frobnicate'], 'invalid_argument'],
  ])('exits non-zero with a clear message on %s', async (_what, args, code) => {
    const r = await ctl(...args, '--json');
    expect(r.code).not.toBe(0);
    expect(r.json.error.code).toBe(code);
    expect(r.stderr.length).toBeGreaterThan(10);
  });

  it('checks only the settings it uses (a bad PORT is the gateway’s business)', async () => {
    const r = await audiencectl({ ...env, PORT: 'abc', TOKEN_TTL_SECONDS: 'soon' }, 'team', 'list', '--json');
    expect(r.code).toBe(0);
  });

  it('reports Redis being away as unavailable with --json (a documented code), exit 1', async () => {
    const r = await audiencectl({ REDIS_URL: 'redis://127.0.0.1:1', REDIS_PREFIX: 'x:' }, 'team', 'list', '--json');
    expect([r.code, r.json.error.code]).toEqual([1, 'unavailable']);
  });

  it('exits 2 for a usage error found after parsing (an empty team name), as for one commander finds', async () => {
    const r = await ctl('team', 'create', '--name', '', '--json');
    expect([r.code, r.json.error.code]).toEqual([2, 'invalid_argument']);
  });

  it('says what to do when Redis is not there', async () => {
    const r = await audiencectl({ REDIS_URL: 'redis://127.0.0.1:1', REDIS_PREFIX: 'x:' }, 'team', 'list');
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/cannot reach Redis at redis:\/\/127\.0\.0\.1:1.*REDIS_URL/);
  });
});

describe('layout definition rules', () => {
  const base = () => structuredClone(DEMO_LAYOUT) as unknown as { layoutId: string; activePageId: string; pages: { pageId: string; controls: Record<string, unknown>[] }[] };
  const cases: [string, (d: ReturnType<typeof base>) => void, RegExp][] = [
    ['a duplicate lid', (d) => (d.pages[1]!.controls[0]!.lid = 1), /lid 1 is used twice/],
    ['a duplicate address', (d) => (d.pages[1]!.controls[0]!.address = '/001'), /address \/001 is used twice/],
    ['an address without a slash', (d) => (d.pages[0]!.controls[0]!.address = '001'), /address/],
    ['an address with letters', (d) => (d.pages[0]!.controls[0]!.address = '/a1'), /address/],
    ['options on a non-Index control', (d) => (d.pages[0]!.controls[0]!.options = [{ index: 0, label: 'x' }]), /layout/],
    ['an Index without options', (d) => delete d.pages[0]!.controls[3]!.options, /options/],
    ['option indices not 0..n-1', (d) => (d.pages[0]!.controls[3]!.options = [{ index: 0, label: 'a' }, { index: 2, label: 'b' }]), /exactly 0\.\.1/],
    ['a duplicate option index', (d) => (d.pages[0]!.controls[3]!.options = [{ index: 0, label: 'a' }, { index: 0, label: 'b' }]), /exactly 0\.\.1/],
    ['an activePageId that is not a page', (d) => (d.activePageId = 'ghost'), /activePageId "ghost"/],
    ['a duplicate pageId', (d) => (d.pages[1]!.pageId = 'main'), /pageId "main" appears twice/],
    ['an unknown control type', (d) => (d.pages[0]!.controls[0]!.type = 'Knob'), /type/],
    ['a control without props.label', (d) => (d.pages[0]!.controls[0]!.props = {}), /label/],
    ['an unknown top-level field', (d) => Object.assign(d, { colour: 'red' }), /unknown field "colour"/],
    ['a layoutId with a brace', (d) => (d.layoutId = 'a{b}'), /layoutId/],
    ['an aggregate mode that does not fit the type', (d) => (d.pages[0]!.controls[1]!.aggregate = { mode: 'votes' }), /controls\[1\] \(page "main" lid 2, Slider\): aggregate mode "votes" does not fit a Slider control; allowed: mean, median, trimmed-mean/],
    ['an aggregate on a String control', (d) => (d.pages[0]!.controls[4]!.aggregate = { mode: 'mean' }), /lid 5, String\): a String control takes no aggregate/],
    ['an aggregate window under 100 ms', (d) => (d.pages[0]!.controls[2]!.aggregate = { mode: 'fraction', windowMs: 99 }), /lid 3, Toggle\): aggregate windowMs must be an integer from 100 to 600000 \(100 ms to 10 minutes\); got 99/],
    ['an aggregate window over 10 minutes', (d) => (d.pages[1]!.controls[0]!.aggregate = { mode: 'rate', windowMs: 600_001 }), /page "encore" lid 7, Button\): aggregate windowMs .* got 600001/],
    ['an aggregate with an unknown mode', (d) => (d.pages[0]!.controls[5]!.aggregate = { mode: 'loudest' }), /aggregate mode "loudest" does not fit a XYPad control; allowed: centroid/],
    ['an aggregate with an unknown field', (d) => (d.pages[0]!.controls[3]!.aggregate = { mode: 'votes', every: 5 }), /aggregate has an unknown field "every"/],
    ['a vote cue without a share', (d) => (d.pages[0]!.controls[3]!.aggregate = { mode: 'votes', cue: { quorum: 10 } }), /lid 4, Index\): a votes cue needs "share"/],
    ['a threshold cue whose below is not under its above', (d) => (d.pages[0]!.controls[2]!.aggregate = { mode: 'fraction', cue: { above: 0.6, below: 0.7 } }), /lid 3, Toggle\): a cue's "below" \(0.7\) must be less than its "above" \(0.6\)/],
    ['a cue on a centroid', (d) => (d.pages[0]!.controls[5]!.aggregate = { mode: 'centroid', cue: { above: 0.6, below: 0.4 } }), /lid 6, XYPad\): a centroid takes no cue/],
    ['a cue with an unknown field', (d) => (d.pages[0]!.controls[2]!.aggregate = { mode: 'fraction', cue: { above: 0.6, below: 0.4, hold: 300 } }), /cue.*unknown field "hold"/],
    ['a zone that is not an id', (d) => Object.assign(d, { zones: ['left side'] }), /zones/],
    ['a zone declared twice', (d) => Object.assign(d, { zones: ['left', 'left'] }), /zones/],
  ];
  it.each(cases)('refuses %s, naming it', async (_what, mutate, message) => {
    const d = base();
    d.layoutId = 'rules-test';
    mutate(d);
    const r = await ctl('layout', 'import', '--team', team, file(`bad-${Math.random()}.json`, d), '--json');
    expect(r.code).not.toBe(0);
    expect(r.json.error.code).toBe('invalid_layout');
    expect(r.json.error.message).toMatch(message);
  });

  it('imports every mode on the type it fits, with and without windowMs, and discovery shows each', async () => {
    const d = base();
    d.layoutId = 'crowd-rules';
    const modes: Record<number, object> = { 1: { mode: 'rate' }, 2: { mode: 'median', windowMs: 100 }, 3: { mode: 'fraction', windowMs: 600_000 }, 4: { mode: 'votes' }, 6: { mode: 'centroid', windowMs: 2000 } };
    for (const c of d.pages[0]!.controls) if (modes[c.lid as number]) c.aggregate = modes[c.lid as number];
    const r = await ctl('layout', 'import', '--team', team, file('crowd.json', d), '--json');
    expect(r.code).toBe(0);
    const shown = await ctl('layout', 'show', 'crowd-rules', '--json');
    const controls = shown.json.pages[0].controls as { lid: number; aggregate?: object }[];
    expect(Object.fromEntries(controls.filter((c) => c.aggregate).map((c) => [c.lid, c.aggregate]))).toEqual(modes);
    const text = await ctl('layout', 'show', 'crowd-rules');
    expect(text.stdout).toMatch(/lid 2 .* \(crowd: median of each participant's latest value over 100 ms\)/);
    expect(text.stdout).toMatch(/lid 1 .* \(crowd: presses per second over 1 s\)/);
    expect(text.stdout).not.toMatch(/lid 5 .*crowd/);
  });

  it('imports cues and zones; layout show says each cue and the zones', async () => {
    const d = base();
    d.layoutId = 'cue-rules';
    Object.assign(d, { zones: ['left', 'right'] });
    d.pages[0]!.controls[2]!.aggregate = { mode: 'fraction', cue: { above: 0.6, below: 0.4, quorum: 10, holdMs: 300 } };
    d.pages[0]!.controls[3]!.aggregate = { mode: 'votes', windowMs: 10_000, cue: { quorum: 10, share: 0.6, holdMs: 500 } };
    expect((await ctl('layout', 'import', '--team', team, file('cues.json', d), '--json')).code).toBe(0);
    const shown = await ctl('layout', 'show', 'cue-rules', '--json');
    expect(shown.json.zones).toEqual(['left', 'right']);
    expect(shown.json.pages[0].controls[3].aggregate.cue).toEqual({ quorum: 10, share: 0.6, holdMs: 500 });
    const text = (await ctl('layout', 'show', 'cue-rules')).stdout;
    expect(text).toContain('zones left, right');
    expect(text).toMatch(/lid 3 .*cue: 1 at or above 0.6, then 0 at or below 0.4 \(10 counted at least, held 300 ms\)/);
    expect(text).toMatch(/lid 4 .*cue: the winning option once it has 60 % of the votes \(10 counted at least, held 500 ms\), once until re-armed/);
    const cues = await ctl('crowd', 'cues', 'cue-rules', '--json');
    expect(cues.json.cues.map((c: { lid: number; phase: string }) => [c.lid, c.phase])).toEqual([[3, 'armed'], [4, 'armed']]);
  });

  it('refuses a file that is not JSON or cannot be read', async () => {
    const notJson = await ctl('layout', 'import', '--team', team, file('x.json', '{nope'), '--json');
    expect(notJson.json.error.code).toBe('invalid_layout');
    const missing = await ctl('layout', 'import', '--team', team, join(dir, 'missing.json'), '--json');
    expect(missing.json.error.code).toBe('invalid_argument');
  });
});

describe('key commands', () => {
  it('prints the secret once at creation and never again', async () => {
    const created = await ctl('key', 'create', '--team', team, '--name', 'backend', '--json');
    expect(created.code).toBe(0);
    expect(created.json.apiKey).toMatch(new RegExp(`^${created.json.keyId}\\.[A-Za-z0-9_-]{43}$`));
    const secret = (created.json.apiKey as string).split('.')[1]!;
    const list = await ctl('key', 'list', '--team', team, '--json');
    const human = await ctl('key', 'list', '--team', team);
    for (const out of [list.stdout, human.stdout]) expect(out).not.toContain(secret);
    expect(list.json.keys.find((k: { keyId: string }) => k.keyId === created.json.keyId)).toMatchObject({ name: 'backend', scope: { kind: 'team' }, revokedAt: null });
    expect(await redis.get().client.hget(new RedisKeys(env.REDIS_PREFIX).apiKey(created.json.keyId), 'secretHash')).not.toContain(secret);
  });

  it('creates allow-listed keys only for the team’s own layouts', async () => {
    const ok = await ctl('key', 'create', '--team', team, '--layouts', 'demo-show', '--json');
    expect(ok.code).toBe(0);
    const list = await ctl('key', 'list', '--team', team, '--json');
    expect(list.json.keys.find((k: { keyId: string }) => k.keyId === ok.json.keyId).scope).toEqual({ kind: 'layouts', layouts: ['demo-show'] });
    const other = (await ctl('team', 'create', '--name', 'Third', '--json')).json.teamId as string;
    const foreign = await ctl('key', 'create', '--team', other, '--layouts', 'demo-show', '--json');
    expect(foreign.code).not.toBe(0);
    expect(foreign.json.error.code).toBe('layout_not_found');
  });

  it('revokes a key and says so in the list; an unknown key is an error', async () => {
    const k = (await ctl('key', 'create', '--team', team, '--json')).json.keyId as string;
    const r = await ctl('key', 'revoke', k, '--json');
    expect(r.code).toBe(0);
    expect(Date.parse(r.json.revokedAt)).toBeGreaterThan(0);
    const list = await ctl('key', 'list', '--team', team);
    expect(list.stdout).toMatch(new RegExp(`${k}.*revoked`));
    const unknown = await ctl('key', 'revoke', 'ak_0000000000000000', '--json');
    expect(unknown.json.error.code).toBe('key_not_found');
  });
});

describe('admin commands', () => {
  it('creates an administrator with a generated password printed once, and resets it', async () => {
    const created = await ctl('admin', 'create', '--team', team, '--email', 'Ops@Acme.Example', '--json');
    expect(created.code).toBe(0);
    expect(created.json).toEqual({ email: 'ops@acme.example', password: expect.stringMatching(/^[A-Za-z2-9]{20}$/) });
    const stored = await redis.get().client.hget(new RedisKeys(env.REDIS_PREFIX).admin('ops@acme.example'), 'passwordHash');
    expect(stored).toMatch(/^scrypt\$32768\$8\$3\$/);
    expect(stored).not.toContain(created.json.password);
    const again = await ctl('admin', 'create', '--team', team, '--email', 'ops@acme.example', '--json');
    expect(again.json.error.code).toBe('admin_exists');
    const reset = await ctl('admin', 'reset-password', 'ops@acme.example', '--json');
    expect(reset.code).toBe(0);
    expect(reset.json.password).not.toBe(created.json.password);
    expect((await ctl('admin', 'reset-password', 'nobody@acme.example', '--json')).json.error.code).toBe('admin_not_found');
    expect((await ctl('admin', 'create', '--team', team, '--email', 'not-an-email', '--json')).json.error.code).toBe('invalid_argument');
    expect((await ctl('admin', 'create', '--team', 'team_000000000000', '--email', 'x@y.example', '--json')).json.error.code).toBe('team_not_found');
  });
});

describe('signing-key commands', () => {
  it('rotates, lists, refuses to retire the current key and retires an old one', async () => {
    const first = await ctl('signing-key', 'rotate', '--json');
    const second = await ctl('signing-key', 'rotate', '--json');
    expect(second.json.kid).not.toBe(first.json.kid);
    const list = await ctl('signing-key', 'list', '--json');
    expect(list.json.keys.filter((k: { current: boolean }) => k.current).map((k: { kid: string }) => k.kid)).toEqual([second.json.kid]);
    const refuse = await ctl('signing-key', 'retire', second.json.kid, '--json');
    expect(refuse.json.error.code).toBe('signing_key_in_use');
    const retire = await ctl('signing-key', 'retire', first.json.kid, '--json');
    expect(retire.code).toBe(0);
    expect(retire.json.kid).toBe(first.json.kid);
    const unknown = await ctl('signing-key', 'retire', 'sk_nope', '--json');
    expect(unknown.json.error.code).toBe('signing_key_not_found');
  });
});

describe('a layout with many problems', () => {
  /** Four missing fields, a duplicate lid, an aggregate that does not fit, options that skip an index. */
  const broken = {
    layoutId: 'many-problems',
    pages: [
      {
        controls: [
          { lid: 1, address: '/001', type: 'Button', props: { label: 'Go' } },
          { lid: 1, address: '/002', type: 'Slider', props: { label: 'Dup' }, aggregate: { mode: 'votes' } },
          { lid: 3, address: '/003', type: 'Index', props: { label: 'Pick' }, options: [{ index: 0, label: 'a' }, { index: 2, label: 'b' }] },
        ],
      },
    ],
  };
  const expected = [/is missing the field "name"/, /is missing the field "activePageId"/, /pages\[0\] is missing the field "pageId"/, /lid 1 is used twice/, /controls\[1\] .*aggregate mode "votes" does not fit a Slider/, /controls\[2\] .*option indices must be exactly 0\.\.1/];

  it('import reports every problem in one answer, each naming its path', async () => {
    const r = await ctl('layout', 'import', '--team', team, file('many.json', broken), '--json');
    expect(r.code).toBe(1);
    expect(r.json.error.code).toBe('invalid_layout');
    expect(r.json.error.message).toMatch(/^7 problems in the layout definition:/);
    for (const m of expected) expect(r.json.error.message).toMatch(m);
  });

  it('layout check validates a file without importing it, and needs no Redis', async () => {
    const noRedis = { REDIS_URL: 'redis://127.0.0.1:1', REDIS_PREFIX: 'none:' };
    const bad = await audiencectl(noRedis, 'layout', 'check', file('many-check.json', broken));
    expect(bad.code).toBe(1);
    for (const m of expected) expect(bad.stderr).toMatch(m);
    const good = await audiencectl(noRedis, 'layout', 'check', file('good.json', DEMO_LAYOUT), '--json');
    expect([good.code, good.json]).toEqual([0, { valid: true, layoutId: 'demo-show', pages: 2, controls: DEMO_LAYOUT.pages.reduce((n, p) => n + p.controls.length, 0) }]);
    expect((await ctl('layout', 'list', '--team', team, '--json')).json.layouts.map((l: { layoutId: string }) => l.layoutId)).not.toContain('many-problems');
  });

  it('stops at 50 problems and says how many more there are', async () => {
    const many = { ...broken, pages: [{ pageId: 'p', name: 'P', controls: Array.from({ length: 60 }, (_, i) => ({ lid: i, address: `/${String(i).padStart(3, '0')}`, type: 'Knob', props: { label: 'x' } })) }] };
    const r = await audiencectl(env, 'layout', 'check', file('sixty.json', many), '--json');
    expect(r.json.error.message.split('\n').filter((l: string) => l.startsWith('- '))).toHaveLength(50);
    expect(r.json.error.message).toMatch(/\(and \d+ more\)$/);
  });
});
