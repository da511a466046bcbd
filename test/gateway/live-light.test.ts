// Light looks on the live channel, end to end with real processes: audiencectl plays a look on a
// layout's light canvas (one entry on its light stream), and every gateway process holding the
// layout's sockets sends it to the sockets of its zone (or, for *, of every zone) ahead of when
// they start it: at = the entry's time + lightLeadMs. A socket that opens later gets the current
// look at once. Bad looks are refused with a stable code and append nothing; a bad entry on the
// stream is skipped and the looks after it still arrive, also after the reader's connection is cut.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAjv } from '../../schemas/ajv.js';
import { createStores } from '../../gateway/store/stores.js';
import type { LayoutDefinition } from '../../schemas/types.js';
import { audiencectl, audiencectlJson } from '../helpers/cli.js';
import { spawnGateway, seedLayout, type GatewayProcess } from '../helpers/gateway-process.js';
import { DEMO_LAYOUT, eventually, postJson } from '../helpers/gateway.js';
import { connectLive, type Frame, type LiveClient } from '../helpers/live.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';

const redis = useRedis();
const lightFrame = createAjv().getSchema('live-server-frames.schema.json#/$defs/light')!;
const LEAD_MS = 150;
const CANVAS: LayoutDefinition = { ...DEMO_LAYOUT, layoutId: 'lit-show', zones: ['left', 'right', 'balcony'], light: { lightLeadMs: LEAD_MS, zones: ['left', 'right'] } };
const DARK: LayoutDefinition = { ...DEMO_LAYOUT, layoutId: 'dark-show', zones: ['left'] };
let plain: Redis;
let apiKey = '';
let teamId = '';
let env: { REDIS_URL: string; REDIS_PREFIX: string };
let one: GatewayProcess;
let two: GatewayProcess;
const open: LiveClient[] = [];

beforeAll(async () => {
  const prefix = randomPrefix();
  const seeded = await seedLayout(redis.get().server.url, prefix, CANVAS);
  apiKey = seeded.apiKey;
  const stores = createStores(seeded.admin, prefix);
  teamId = (await stores.layouts.get(CANVAS.layoutId))!.teamId;
  await stores.layouts.import(teamId, DARK);
  seeded.admin.disconnect();
  plain = new Redis(redis.get().server.url);
  env = { REDIS_URL: redis.get().server.url, REDIS_PREFIX: prefix };
  [one, two] = await Promise.all([spawnGateway(env), spawnGateway(env)]);
}, 60_000);
afterAll(() => {
  for (const s of open) s.ws.terminate();
  for (const g of [one, two]) g?.child.kill('SIGKILL');
  plain?.disconnect();
});

async function token(layoutId: string, extra: Record<string, unknown> = {}): Promise<string> {
  const r = await postJson(`${one.url}/token`, { layoutId, ...extra }, { 'x-api-key': apiKey });
  if (r.status !== 200) throw new Error(`token: ${r.status} ${JSON.stringify(r.body)}`);
  return (r.body as { token: string }).token;
}

/** A phone of the zone ('' for none) on a gateway, its first frames received. */
async function phone(g: GatewayProcess, zone: string, layoutId = CANVAS.layoutId): Promise<LiveClient> {
  const s = await connectLive(g.url, await token(layoutId, zone === '' ? {} : { zone }));
  open.push(s);
  return s;
}

const lights = (s: LiveClient) => s.frames.filter((f) => f.op === 'light');
const light = (...args: string[]) => audiencectlJson(env, 'light', ...args);

async function redisNow(): Promise<number> {
  const [s, us] = await plain.time();
  return Number(s) * 1000 + Number(us) / 1000;
}

/** The light frame with this stream id a socket got, waited for. */
async function lookOn(s: LiveClient, id: string): Promise<Frame> {
  await eventually(() => lights(s).some((f) => f.id === id), 5000);
  return lights(s).find((f) => f.id === id)!;
}

describe('light looks on the live channel', () => {
  it("a zone's look reaches its phones on every gateway, ahead of when it starts, and no other zone's", async () => {
    const [left1, left2, right, balcony] = await Promise.all([phone(one, 'left'), phone(two, 'left'), phone(one, 'right'), phone(two, 'balcony')]);
    await new Promise((r) => setTimeout(r, 300)); // the gateways' readers are on the stream
    // when each left phone's light frame arrives, in Redis's time (this host's clock, set by Redis's once):
    // read at the socket, not when the test's poll next looks, which a loaded machine delays
    const offset = (await redisNow()) - Date.now();
    const arrived = new Map<LiveClient, number>();
    for (const s of [left1, left2]) s.ws.on('message', (d: Buffer) => (JSON.parse(d.toString('utf8')) as Frame).op === 'light' && !arrived.has(s) && arrived.set(s, Date.now() + offset));
    const played = await light(CANVAS.layoutId, 'left', '--color', '#FF8800', '--brightness', '0.5', '--fade', '200', '--wave', '90,0.5');
    const idMs = Number(String(played.id).split('-')[0]);
    expect(Date.parse(played.at)).toBe(idMs + LEAD_MS);
    for (const s of [left1, left2]) {
      const f = await lookOn(s, played.id);
      const gotAt = arrived.get(s)!;
      expect(lightFrame(f), JSON.stringify(lightFrame.errors)).toBe(true);
      expect(f).toEqual({ op: 'light', id: played.id, zone: 'left', at: idMs + LEAD_MS, color: '#ff8800', brightness: 0.5, fadeMs: 200, pattern: { type: 'wave', direction: 90, speed: 0.5 } });
      expect(gotAt, 'received before the look starts').toBeLessThan(idMs + LEAD_MS);
    }
    await new Promise((r) => setTimeout(r, 300));
    expect(lights(right)).toEqual([]);
    expect(lights(balcony)).toEqual([]);
  });

  it('a look for * reaches every phone of the layout, with a zone or none, and no other layout', async () => {
    const [left, right, balcony, nowhere, dark] = await Promise.all([phone(one, 'left'), phone(two, 'right'), phone(one, 'balcony'), phone(two, ''), phone(one, 'left', DARK.layoutId)]);
    await new Promise((r) => setTimeout(r, 300));
    const played = await light(CANVAS.layoutId, '*', '--color', '#0000ff', '--strobe', '10');
    for (const s of [left, right, balcony, nowhere]) expect((await lookOn(s, played.id)).pattern).toEqual({ type: 'strobe', hz: 10 });
    await new Promise((r) => setTimeout(r, 300));
    expect(lights(dark)).toEqual([]);
  });

  it("a phone that opens later gets its zone's current look at once: its zone's own, or else the layout's", async () => {
    const all = await light(CANVAS.layoutId, '*', '--color', '#111111');
    const left = await light(CANVAS.layoutId, 'left', '--color', '#222222');
    await new Promise((r) => setTimeout(r, 300));
    for (const g of [one, two]) {
      const [l, r, n] = await Promise.all([phone(g, 'left'), phone(g, 'right'), phone(g, '')]);
      expect(lights(l).map((f) => f.id)).toEqual([left.id]);
      expect(lights(r).map((f) => f.id)).toEqual([all.id]);
      expect(lights(n).map((f) => f.id)).toEqual([all.id]);
      // the look comes with the page, before any later frame
      expect(l.frames.findIndex((f) => f.op === 'light')).toBeGreaterThan(l.frames.findIndex((f) => f.op === 'page'));
    }
  });

  it('a gateway that starts after the looks were played finds the current ones on the stream', async () => {
    const off = await light(CANVAS.layoutId, 'right', '--off');
    const late = await spawnGateway(env);
    try {
      const s = await connectLive(late.url, await token(CANVAS.layoutId, { zone: 'right' }));
      open.push(s);
      const f = await lookOn(s, off.id);
      expect(f).toEqual({ op: 'light', id: off.id, zone: 'right', at: Number(off.id.split('-')[0]) + LEAD_MS, off: true });
      // it may come after the layout's older look (for the zones without one of their own), never before
      expect(lights(s).at(-1)).toEqual(f);
    } finally {
      late.child.kill('SIGKILL');
    }
  });

  it('a look the canvas cannot play is refused with a stable code, and nothing is appended', async () => {
    const key = `${env.REDIS_PREFIX}layout:{${CANVAS.layoutId}}:light`;
    const before = await plain.xlen(key);
    const refusals: [string[], string][] = [
      [[DARK.layoutId, 'left'], 'light_canvas_missing'],
      [[CANVAS.layoutId, 'balcony'], 'zone_not_found'],
      [[CANVAS.layoutId, 'nowhere'], 'zone_not_found'],
      [['no-such-layout', 'left'], 'layout_not_found'],
      [[CANVAS.layoutId, 'left', '--color', 'red'], 'invalid_body'],
      [[CANVAS.layoutId, 'left', '--brightness', '2'], 'invalid_body'],
      [[CANVAS.layoutId, 'left', '--brightness', 'bright'], 'invalid_argument'],
      [[CANVAS.layoutId, 'left', '--strobe', '100'], 'invalid_body'],
      [[CANVAS.layoutId, 'left', '--wave', '90'], 'invalid_argument'],
      [[CANVAS.layoutId, 'left', '--off', '--color', '#ffffff'], 'invalid_argument'],
      [[CANVAS.layoutId, 'left', '--wave', '0,1', '--strobe', '2'], 'invalid_argument'],
    ];
    for (const [args, code] of refusals) {
      const r = await audiencectl(env, 'light', ...args, '--json');
      expect(r.code, `${args.join(' ')}: ${r.stdout}${r.stderr}`).not.toBe(0);
      expect(r.json?.error?.code, args.join(' ')).toBe(code);
    }
    expect(await plain.xlen(key)).toBe(before);
  });

  it('a bad entry on the stream is skipped, and the looks after it arrive; so do those played while the reader was cut off', async () => {
    const key = `${env.REDIS_PREFIX}layout:{${CANVAS.layoutId}}:light`;
    const s = await phone(one, 'left');
    await new Promise((r) => setTimeout(r, 300));
    const bad: string[] = [];
    for (const look of ['not json', '{"zone":"left","color":"#zzzzzz"}', '{"zone":"balcony"}', JSON.stringify({ zone: 'left', brightness: -1 })]) bad.push((await plain.xadd(key, '*', 'look', look))!);
    bad.push((await plain.xadd(key, '*', 'other', 'field'))!);
    const good = await light(CANVAS.layoutId, 'left', '--color', '#333333');
    expect((await lookOn(s, good.id)).color).toBe('#333333');
    expect(lights(s).filter((f) => bad.includes(String(f.id)))).toEqual([]);
    // every gateway's light reader is cut off; a look played meanwhile arrives once they read again
    const clients = (await plain.client('LIST')) as string;
    const readers = clients.split('\n').filter((l) => / name=audience-gateway-light /.test(l)).map((l) => /id=(\d+)/.exec(l)![1]!);
    expect(readers.length).toBeGreaterThan(0);
    for (const id of readers) await plain.client('KILL', 'ID', id);
    const meanwhile = await light(CANVAS.layoutId, 'left', '--color', '#444444');
    expect((await lookOn(s, meanwhile.id)).color).toBe('#444444');
  });

  it("looks a gateway reads in one batch are folded: each zone's newest goes out, a * look before the zones' looks after it", async () => {
    const key = `${env.REDIS_PREFIX}layout:{${CANVAS.layoutId}}:light`;
    const [left, right] = await Promise.all([phone(one, 'left'), phone(one, 'right')]);
    await new Promise((r) => setTimeout(r, 300));
    // one transaction: a blocked XREAD is answered after it, with all of its entries
    const r = (await plain
      .multi()
      .xadd(key, '*', 'look', JSON.stringify({ zone: 'left', color: '#a00000' }))
      .xadd(key, '*', 'look', JSON.stringify({ zone: 'left', color: '#b00000' }))
      .xadd(key, '*', 'look', JSON.stringify({ zone: '*', color: '#c00000' }))
      .xadd(key, '*', 'look', JSON.stringify({ zone: 'left', color: '#d00000' }))
      .exec())!.map(([, id]) => String(id));
    await lookOn(left, r[3]!);
    await lookOn(right, r[2]!);
    await new Promise((r) => setTimeout(r, 300));
    const batch = (s: LiveClient) => lights(s).filter((f) => r.includes(String(f.id))).map((f) => f.id);
    expect(batch(left)).toEqual([r[2], r[3]]);
    expect(batch(right)).toEqual([r[2]]);
  });

  it('a canvas made by a re-import lights the sockets already open', async () => {
    const layout: LayoutDefinition = { ...DEMO_LAYOUT, layoutId: 'lit-later' };
    const stores = createStores(plain, env.REDIS_PREFIX);
    await stores.layouts.import(teamId, layout);
    const s = await phone(two, '', layout.layoutId);
    const refused = await audiencectl(env, 'light', layout.layoutId, '*', '--json');
    expect(refused.json?.error?.code).toBe('light_canvas_missing');
    await stores.layouts.import(teamId, { ...layout, light: {} });
    await eventually(async () => (await stores.layouts.get(layout.layoutId))?.light !== null);
    await new Promise((r) => setTimeout(r, 500)); // the gateway heard of the re-import and reads the stream
    const played = await light(layout.layoutId, '*', '--color', '#555555');
    const f = await lookOn(s, played.id);
    expect(f.at).toBe(Number(played.id.split('-')[0]) + 150); // the default lead
  });
});

describe('a seat in the zone', () => {
  const claims = (t: string) => JSON.parse(Buffer.from(t.split('.')[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;

  it('is signed into the token at mint and kept by a renewal', async () => {
    const t = await token(CANVAS.layoutId, { zone: 'left', seat: { x: 0.42, y: 0.1 } });
    expect(claims(t)).toMatchObject({ zone: 'left', seat: { x: 0.42, y: 0.1 } });
    const renewed = await postJson(`${one.url}/token`, { layoutId: CANVAS.layoutId, renew: t }, { 'x-api-key': apiKey });
    expect(renewed.status).toBe(200);
    expect(claims((renewed.body as { token: string }).token)).toMatchObject({ sub: claims(t).sub, zone: 'left', seat: { x: 0.42, y: 0.1 } });
    expect(claims(await token(CANVAS.layoutId))).not.toHaveProperty('seat');
  });

  it('outside 0 to 1, incomplete, or with a renewal is refused with 400 invalid_body', async () => {
    const t = await token(CANVAS.layoutId);
    for (const body of [
      { layoutId: CANVAS.layoutId, seat: { x: 1.5, y: 0 } },
      { layoutId: CANVAS.layoutId, seat: { x: 0.5, y: -0.1 } },
      { layoutId: CANVAS.layoutId, seat: { x: 0.5 } },
      { layoutId: CANVAS.layoutId, seat: { x: '0.5', y: 0.5 } },
      { layoutId: CANVAS.layoutId, seat: { x: 0.5, y: 0.5, z: 1 } },
      { layoutId: CANVAS.layoutId, seat: { x: 0.5, y: 0.5 }, renew: t },
    ]) {
      const r = await postJson(`${one.url}/token`, body, { 'x-api-key': apiKey });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect((r.body as { error: { code: string } }).error.code).toBe('invalid_body');
    }
  });
});

describe('a light canvas in a layout definition', () => {
  it("names only the layout's zones", async () => {
    const stores = createStores(plain, env.REDIS_PREFIX);
    const bad: [LayoutDefinition['light'], string[] | undefined, RegExp][] = [
      [{ zones: ['left', 'stage'] }, ['left'], /light\.zones "stage" is not one of the layout's zones/],
      [{ zones: ['left'] }, undefined, /it declares none/],
      [{ zones: ['a', 'a'] }, ['a'], /duplicate/],
      [{ lightLeadMs: 2001 }, undefined, /lightLeadMs/],
      [{ lightLeadMs: 5 }, undefined, /lightLeadMs/],
      [{ dmx: { universe: 1, address: 507 } }, ['a', 'b'], /light\.dmx: 2 fixtures of 6 channels from address 507 end at channel 518, past the universe's 512/],
      [{ dmx: { universe: 1, address: 508 } }, undefined, /light\.dmx: 1 fixture of 6 channels from address 508 end at channel 513/],
      [{ dmx: { universe: 0 } }, undefined, /universe/],
      [{ dmx: { universe: 64000 } }, undefined, /universe/],
      [{ dmx: { address: 1 } } as never, undefined, /universe/],
    ];
    for (const [light, zones, problem] of bad) {
      const def = { ...DEMO_LAYOUT, layoutId: 'bad-canvas', light, ...(zones && { zones }) };
      await expect(stores.layouts.import(teamId, def), JSON.stringify(light)).rejects.toMatchObject({ code: 'invalid_layout', message: expect.stringMatching(problem) });
    }
    await expect(stores.layouts.import(teamId, { ...DEMO_LAYOUT, layoutId: 'good-canvas', zones: ['a', 'b'], light: { lightLeadMs: 40 } })).resolves.toMatchObject({ layoutId: 'good-canvas' });
    expect((await stores.layouts.get('good-canvas'))!.light).toEqual({ lightLeadMs: 40, zones: ['a', 'b'], dmx: null });
    // the last channel of the universe is the last fixture's last: it fits
    await stores.layouts.import(teamId, { ...DEMO_LAYOUT, layoutId: 'patched-canvas', zones: ['a', 'b'], light: { dmx: { universe: 7, address: 501 } } });
    expect((await stores.layouts.get('patched-canvas'))!.light).toEqual({ lightLeadMs: 150, zones: ['a', 'b'], dmx: { universe: 7, address: 501 } });
  });
});
