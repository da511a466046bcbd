// OSCQuery through the real processes: a gateway process, a bridge process with oscQueryPort and
// two targets (a liblo oscdump over UDP with the layout's own addresses, another over TCP with
// routes). Over HTTP the bridge serves the namespace as those targets receive it, in the shape of
// the OSCQuery proposal's examples, with HOST_INFO naming the OSC transport and port; over its
// WebSocket a LISTEN streams what the displays were sent, IGNORE stops it, and re-importing the
// layout says PATH_CHANGED. A bridge whose Redis user may not read the layout's definition (an
// older grant) keeps playing, says why in /readyz, and fills the namespace once it may.
import { readdirSync, readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { layoutKey } from '../../schemas/redis-keys.js';
import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { fromBuffer, type OscPacketOutput } from 'osc-min';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { Ajv } from 'ajv';
import { freePort } from '../../dev/redis-server.js';
import { bridgeAclRules } from '../../gateway/store/bridge-acl.js';
import { createStores } from '../../gateway/store/stores.js';
import type { LayoutDefinition } from '../../schemas/types.js';
import { configFile, spawnBridge, stopProcess } from '../helpers/bridge.js';
import { eventually, mintToken, postAction } from '../helpers/gateway.js';
import { spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { startOscdump, type Oscdump } from '../helpers/oscdump.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';

const LAYOUT: LayoutDefinition = {
  layoutId: 'oscquery-show',
  name: 'OSCQuery show',
  activePageId: 'main',
  zones: ['left'],
  pages: [{
    pageId: 'main',
    name: 'Main',
    controls: [
      { lid: 2, address: '/002', type: 'Slider', props: { label: 'Opacity' } },
      { lid: 4, address: '/004', type: 'Index', props: { label: 'Colour' }, options: [{ index: 0, label: 'Red' }, { index: 1, label: 'Blue' }] },
      { lid: 10, address: '/010', type: 'Slider', props: { label: 'Crowd level' }, aggregate: { mode: 'mean', windowMs: 60_000 } },
    ],
  }],
};
const ROUTES = [
  { lid: 2, address: '/dimmer', range: [0, 255], int: true },
  { lid: 4, options: { 0: '/cue/red/go', 1: '/cue/blue/go' } },
];

/** The node format of the OSCQuery proposal (its "Required" and "Optional Attributes"), as a JSON Schema. */
const NODE_SCHEMA = {
  $id: 'oscquery-node',
  type: 'object',
  required: ['FULL_PATH'],
  properties: {
    FULL_PATH: { type: 'string', pattern: '^/' },
    CONTENTS: { type: 'object', additionalProperties: { $ref: 'oscquery-node' } },
    TYPE: { type: 'string', pattern: '^[ifsbhtdSrcmTFNI[\\]]*$' },
    DESCRIPTION: { type: 'string' },
    ACCESS: { enum: [0, 1, 2, 3] },
    VALUE: { type: 'array' },
    RANGE: { type: 'array', items: { anyOf: [{ type: 'null' }, { type: 'object', additionalProperties: false, properties: { MIN: { type: 'number' }, MAX: { type: 'number' }, VALS: { type: 'array' } } }] } },
  },
};
/** The proposal's first example, written out again: a read-only float, two ranged ints, a container with a string chosen from VALS. */
const PROPOSAL_EXAMPLE = {
  DESCRIPTION: 'root node', FULL_PATH: '/', ACCESS: 0,
  CONTENTS: {
    foo: { DESCRIPTION: 'read-only float', FULL_PATH: '/foo', ACCESS: 1, TYPE: 'f', VALUE: [0.5], RANGE: [{ MIN: 0.0, MAX: 100.0 }] },
    bar: { DESCRIPTION: 'two ranged ints', FULL_PATH: '/bar', ACCESS: 3, TYPE: 'ii', VALUE: [4, 51], RANGE: [{ MIN: 0, MAX: 50 }, { MIN: 51, MAX: 100 }] },
    baz: { DESCRIPTION: 'container', FULL_PATH: '/baz', ACCESS: 0, CONTENTS: { qux: { FULL_PATH: '/baz/qux', ACCESS: 3, TYPE: 's', VALUE: ['half-full'], RANGE: [{ VALS: ['empty', 'half-full', 'full'] }] } } },
  },
};

const redis = useRedis();
let gateway: GatewayProcess;
let bridge: ChildProcess;
let bridgeOutput: () => string;
let plain: Oscdump;
let routed: Oscdump;
let apiKey: string;
let teamId: string;
let prefix: string;
let base: string;
let admin: Redis;

const get = async (path: string, init: RequestInit = {}) => {
  const res = await fetch(`${base}${path}`, init);
  const text = await res.text();
  return { status: res.status, type: res.headers.get('content-type'), body: text === '' ? undefined : (JSON.parse(text) as Record<string, unknown>) };
};

beforeAll(async () => {
  prefix = randomPrefix();
  admin = new Redis(redis.get().server.url);
  const stores = createStores(admin, prefix);
  teamId = (await stores.teams.create('OSCQuery')).teamId;
  await stores.layouts.import(teamId, LAYOUT);
  apiKey = (await stores.apiKeys.create(teamId, { name: 'backend' })).apiKey;
  gateway = await spawnGateway({ REDIS_URL: redis.get().server.url, REDIS_PREFIX: prefix });
  plain = await startOscdump();
  routed = await startOscdump({ tcp: true });
  const oscQueryPort = await freePort();
  base = `http://127.0.0.1:${oscQueryPort}`;
  const config = configFile({
    redisUrl: redis.get().server.url,
    prefix,
    more: { oscQueryPort },
    layouts: [{ layoutId: LAYOUT.layoutId, tickHz: 100, targets: [{ host: '127.0.0.1', port: plain.port }, { host: '127.0.0.1', port: routed.port, transport: 'tcp', routes: ROUTES, unrouted: 'drop' }] }],
  });
  ({ child: bridge, output: bridgeOutput } = await spawnBridge(['--config', config]));
}, 60_000);
afterAll(async () => {
  if (bridge) await stopProcess(bridge);
  plain?.child.kill();
  routed?.child.kill();
  gateway?.child.kill('SIGTERM');
  admin?.disconnect();
});

/** utime + stime of one thread of a process, in clock ticks. */
const threadCpu = (pid: number, tid: string) => {
  const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
};

describe('OSCQuery off the send loop', () => {
  it('is served by a thread of its own: a flood of requests costs that thread, not the event loop', async () => {
    const pid = bridge.pid!;
    const tids = readdirSync(`/proc/${pid}/task`);
    const own = tids.filter((t) => readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').trim() === 'oscquery');
    expect(own).toHaveLength(1);
    const [loop, server] = [String(pid), own[0]!];
    const before = [threadCpu(pid, loop), threadCpu(pid, server)];
    const started = performance.now();
    // 3,000 requests, 20 at a time, over kept-alive connections
    const agent = new Agent({ keepAlive: true, maxSockets: 20 });
    const one = () => new Promise<void>((resolve) => request(`${base}/`, { agent }, (res) => (res.resume(), res.on('end', () => resolve()))).end());
    for (let i = 0; i < 150; i++) await Promise.all(Array.from({ length: 20 }, one));
    agent.destroy();
    const flooded = performance.now() - started;
    const [loopCpu, serverCpu] = [threadCpu(pid, loop) - before[0]!, threadCpu(pid, server) - before[1]!];
    // the event loop ticks the layout at 100 Hz meanwhile: its cost over as long a quiet spell, just
    // after, is what it spends anyway (a loaded machine stretches the flood, and the ticks with it)
    const quiet0 = threadCpu(pid, loop);
    await new Promise((r) => setTimeout(r, flooded));
    const quietCpu = threadCpu(pid, loop) - quiet0;
    console.log(`figure: 3,000 OSCQuery GETs in ${Math.round(flooded)} ms: ${serverCpu} ticks on the oscquery thread, ${loopCpu} on the event loop (${quietCpu} in as long a quiet spell)`);
    expect(serverCpu).toBeGreaterThan(10);
    expect(loopCpu - quietCpu).toBeLessThan(serverCpu / 2);
  });
});

describe('OSCQuery over HTTP from a real bridge', () => {
  it("serves the namespace as its targets receive it, in the proposal's node format", async () => {
    const validate = new Ajv().compile(NODE_SCHEMA);
    expect(validate(PROPOSAL_EXAMPLE), JSON.stringify(validate.errors)).toBe(true);
    const root = await get('/');
    expect(root.status).toBe(200);
    expect(root.type).toBe('application/json');
    expect(validate(root.body), JSON.stringify(validate.errors)).toBe(true);
    expect(Object.keys((root.body as { CONTENTS: object }).CONTENTS).sort()).toEqual(['002', '004', '010', 'cue', 'dimmer']);
    expect((await get('/002')).body).toEqual({ FULL_PATH: '/002', ACCESS: 1, TYPE: 'f', RANGE: [{ MIN: 0, MAX: 1 }], DESCRIPTION: 'Opacity' });
    expect((await get('/004')).body).toMatchObject({ TYPE: 'i', RANGE: [{ VALS: [0, 1] }], DESCRIPTION: 'Colour (0 Red, 1 Blue)' });
    expect((await get('/dimmer')).body).toMatchObject({ TYPE: 'i', RANGE: [{ MIN: 0, MAX: 255 }], DESCRIPTION: 'Opacity' });
    expect((await get('/cue/blue/go')).body).toEqual({ FULL_PATH: '/cue/blue/go', ACCESS: 1, DESCRIPTION: 'Colour: Blue' });
    expect((await get('/010/zone/left/n')).body).toMatchObject({ TYPE: 'i', RANGE: [{ MIN: 0 }] });
  });

  it('answers one attribute at a time, HOST_INFO whatever the path, and says what is wrong with a 4xx', async () => {
    expect((await get('/002?RANGE')).body).toEqual({ RANGE: [{ MIN: 0, MAX: 1 }] });
    expect((await get('/010/zone?TYPE')).body).toEqual({});
    expect((await get('/010/zone?VALUE')).status).toBe(204);
    const info = await get('/anything/at/all?HOST_INFO');
    expect(info.body).toMatchObject({
      NAME: 'audience-bridge test-bridge',
      OSC_IP: '127.0.0.1', OSC_PORT: plain.port, OSC_TRANSPORT: 'UDP',
      TARGETS: [`udp://127.0.0.1:${plain.port}`, `tcp://127.0.0.1:${routed.port}`],
      EXTENSIONS: { ACCESS: true, VALUE: true, RANGE: true, DESCRIPTION: true, LISTEN: true, PATH_CHANGED: true },
    });
    expect(await get('/nowhere')).toMatchObject({ status: 404, body: { error: 'not_found' } });
    expect(await get('/002?HTML')).toMatchObject({ status: 400, body: { error: 'unsupported_attribute' } });
    expect(await get('/%E0%A4%A')).toMatchObject({ status: 400, body: { error: 'bad_path' } });
    expect(await get('/002', { method: 'POST', body: '1' })).toMatchObject({ status: 405, body: { error: 'method_not_allowed' } });
  });
});

/** A WebSocket client of the OSCQuery server: the OSC messages and the JSON commands it got. */
async function listener(): Promise<{ ws: WebSocket; osc: { address: string; args: unknown[] }[]; json: unknown[] }> {
  const ws = new WebSocket(base.replace('http', 'ws'));
  const osc: { address: string; args: unknown[] }[] = [];
  const json: unknown[] = [];
  ws.on('message', (data: Buffer, binary) => {
    if (!binary) {
      json.push(JSON.parse(String(data)));
      return;
    }
    const m = fromBuffer(data) as Extract<OscPacketOutput, { oscType: 'message' }>;
    osc.push({ address: m.address, args: m.args.map((a) => (a as { value?: unknown }).value) });
  });
  await new Promise((r, j) => ws.once('open', r).once('error', j));
  return { ws, osc, json };
}

describe('OSCQuery over WebSocket from a real bridge', () => {
  it('streams what the displays were sent to a LISTEN, keeps it as VALUE, and stops on IGNORE', async () => {
    const l = await listener();
    l.ws.send(JSON.stringify({ COMMAND: 'LISTEN', DATA: '/002' }));
    l.ws.send(JSON.stringify({ COMMAND: 'LISTEN', DATA: '/dimmer' }));
    await new Promise((r) => setTimeout(r, 100));
    const token = await mintToken(gateway, LAYOUT.layoutId, apiKey);
    expect((await postAction(gateway, token, { layoutId: LAYOUT.layoutId, lid: 2, type: 'Slider', value: 0.75 })).status).toBe(200);
    await eventually(() => l.osc.length >= 2);
    expect(l.osc).toEqual(expect.arrayContaining([{ address: '/002', args: [0.75] }, { address: '/dimmer', args: [191] }]));
    await eventually(() => plain.last('/002') !== null && routed.last('/dimmer') !== null);
    expect(plain.last('/002')).toEqual({ tags: 'f', values: [0.75] }); // what the listener got is what the displays got
    expect(routed.last('/dimmer')).toEqual({ tags: 'i', values: [191] });
    expect((await get('/002?VALUE')).body).toEqual({ VALUE: [0.75] });
    expect((await get('/dimmer?VALUE')).body).toEqual({ VALUE: [191] });

    l.ws.send(JSON.stringify({ COMMAND: 'IGNORE', DATA: '/002' }));
    await new Promise((r) => setTimeout(r, 100));
    expect((await postAction(gateway, token, { layoutId: LAYOUT.layoutId, lid: 2, type: 'Slider', value: 0.25 })).status).toBe(200);
    await eventually(() => l.osc.some((m) => m.address === '/dimmer' && m.args[0] === 64));
    await eventually(() => plain.lines.some((x) => x.address === '/002' && x.values[0] === 0.25));
    expect(l.osc.filter((m) => m.address === '/002')).toEqual([{ address: '/002', args: [0.75] }]);
    l.ws.close();
  });

  it('says PATH_CHANGED to its clients when the layout is imported again, and serves the new control', async () => {
    const l = await listener();
    const next: LayoutDefinition = { ...LAYOUT, pages: [{ ...LAYOUT.pages[0]!, controls: [...LAYOUT.pages[0]!.controls, { lid: 7, address: '/007', type: 'Toggle', props: { label: 'Confetti' } }] }] };
    await createStores(admin, prefix).layouts.import(teamId, next);
    await eventually(() => l.json.length > 0);
    expect(l.json).toEqual([{ COMMAND: 'PATH_CHANGED', DATA: '/' }]);
    expect((await get('/007')).body).toMatchObject({ TYPE: 'i', RANGE: [{ VALS: [0, 1] }], DESCRIPTION: 'Confetti' });
    expect((await get('/002?VALUE')).body).toEqual({ VALUE: [0.25] }); // a value played is kept across the change
    l.ws.close();
    expect(bridgeOutput()).not.toMatch(/OSCQuery: the bridge's Redis user/);
  });
});

describe('OSCQuery when the Redis user may not read the definition', () => {
  it('plays on, says so in /readyz, and fills the namespace once the user may read it', async () => {
    const user = 'bridge-oscq-old';
    const rules = bridgeAclRules(prefix, [LAYOUT.layoutId], 'old-grant-password').filter((r) => r !== '+client|setinfo'); // Redis 7.2's: this Redis may be older
    const definition = `(~${layoutKey(prefix, LAYOUT.layoutId)} `;
    expect(rules.filter((r) => r.startsWith(definition))).toHaveLength(1);
    await admin.call('ACL', 'SETUSER', user, ...rules.filter((r) => !r.startsWith(definition))); // a grant made before bridges read definitions
    const dump = await startOscdump();
    const port = await freePort();
    const url = new URL(redis.get().server.url);
    const config = configFile({
      redisUrl: `redis://${user}:old-grant-password@${url.host}`,
      prefix,
      bridgeId: 'oscq-old',
      more: { oscQueryPort: port },
      layouts: [{ layoutId: LAYOUT.layoutId, tickHz: 100, targets: [{ host: '127.0.0.1', port: dump.port }] }],
    });
    const old = await spawnBridge(['--config', config]);
    try {
      const opsPort = Number(/"opsPort":(\d+)/.exec(old.output())![1]);
      const ready = await fetch(`http://127.0.0.1:${opsPort}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.text()).toMatch(/OSCQuery: the bridge's Redis user may not read layout oscquery-show's definition: grant it again/);
      const root = (await (await fetch(`http://127.0.0.1:${port}/`)).json()) as { CONTENTS?: object };
      expect(root.CONTENTS).toBeUndefined();
      const token = await mintToken(gateway, LAYOUT.layoutId, apiKey);
      expect((await postAction(gateway, token, { layoutId: LAYOUT.layoutId, lid: 2, type: 'Slider', value: 0.5 })).status).toBe(200);
      await eventually(() => dump.last('/002') !== null);

      await admin.call('ACL', 'SETUSER', user, ...rules);
      await eventually(async () => (await fetch(`http://127.0.0.1:${port}/002`)).status === 200);
      expect(await (await fetch(`http://127.0.0.1:${opsPort}/readyz`)).text()).toBe('ready\n');
      await eventually(() => /the layout's definition is readable again/.test(old.output())); // the log line comes through a pipe
    } finally {
      await stopProcess(old.child);
      dump.child.kill();
      await admin.call('ACL', 'DELUSER', user);
    }
  }, 30_000);
});
