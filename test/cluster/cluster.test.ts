// The whole product on a real Redis Cluster (3 masters, 3 replicas): audiencectl, two gateway
// processes and one bridge process, all given only REDIS_CLUSTER_NODES. Eight layouts spread over
// every master; keys with and without allow-lists; revocation; signing-key rotation; an
// administrator's sign-in and sign-out; a page switch; each action reaching a UDP sink exactly once.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFile, spawnBridge, stopProcess } from '../helpers/bridge.js';
import { signIn } from '../helpers/admin.js';
import { audiencectl, audiencectlJson } from '../helpers/cli.js';
import { recordFigure } from '../helpers/figures.js';
import { spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { DEMO_LAYOUT, call, eventually, postAction, postJson } from '../helpers/gateway.js';
import { useRedisCluster } from '../helpers/redis-cluster.js';
import { UdpSink } from '../helpers/udp-sink.js';

const cluster = useRedisCluster();
const prefix = 'ac:';
const children: ChildProcess[] = [];
const sink = new UdpSink();
let env: { REDIS_URL: string; REDIS_PREFIX: string; REDIS_CLUSTER_NODES: string };
const ctl = (...args: string[]) => audiencectlJson(env, ...args);
/** One command on one node (not through the cluster), its answer as JSON. */
async function onNode(port: number, ...command: string[]): Promise<string> {
  const node = new Redis(port, '127.0.0.1');
  try {
    return JSON.stringify(await node.call(command[0]!, ...command.slice(1)));
  } finally {
    node.disconnect();
  }
}

let layouts: string[] = [];
let teamA = '';
let teamB = '';
let keyA = '';
let keyAId = '';
let listKey = '';
let keyB = '';
let gateways: GatewayProcess[] = [];

beforeAll(async () => {
  env = { REDIS_URL: 'redis://127.0.0.1:1', REDIS_PREFIX: prefix, REDIS_CLUSTER_NODES: cluster.get().seeds }; // REDIS_URL points nowhere: only the cluster may be used
  await sink.start();
  // eight layoutIds whose hash tags fall on every master
  const masters = new Map<number, string[]>();
  for (let i = 0; layouts.length < 8 || masters.size < 3; i++) {
    const id = `show-${i}`;
    const m = await cluster.get().masterOf(`${prefix}layout:{${id}}`);
    const on = masters.get(m) ?? [];
    if (on.length >= 3) continue;
    masters.set(m, [...on, id]);
    layouts = [...masters.values()].flat();
  }
  layouts = layouts.slice(0, 9);
  expect(masters.size).toBe(3);
}, 60_000);
afterAll(async () => {
  for (const c of children) await stopProcess(c, 'SIGKILL');
  await sink.stop();
});

describe('on a 3-master Redis Cluster', () => {
  it('audiencectl: teams, layouts on every master, keys with and without allow-lists, an administrator', async () => {
    teamA = (await ctl('team', 'create', '--name', 'A')).teamId;
    teamB = (await ctl('team', 'create', '--name', 'B')).teamId;
    const dir = mkdtempSync(join(tmpdir(), 'ac-layouts-'));
    for (const [i, layoutId] of layouts.entries()) {
      const file = join(dir, `${layoutId}.json`);
      writeFileSync(file, JSON.stringify({ ...DEMO_LAYOUT, layoutId }));
      expect((await ctl('layout', 'import', '--team', i < layouts.length - 2 ? teamA : teamB, file)).layoutId).toBe(layoutId);
    }
    const a = await ctl('key', 'create', '--team', teamA, '--name', 'whole team');
    keyA = a.apiKey;
    keyAId = a.keyId;
    listKey = (await ctl('key', 'create', '--team', teamA, '--name', 'two layouts', '--layouts', `${layouts[0]},${layouts[1]}`)).apiKey;
    keyB = (await ctl('key', 'create', '--team', teamB)).apiKey;
    expect((await ctl('layout', 'list', '--team', teamA)).layouts).toHaveLength(layouts.length - 2);
    expect((await ctl('key', 'list', '--team', teamA)).keys).toHaveLength(2);
    expect((await ctl('team', 'list')).teams.map((t: { teamId: string }) => t.teamId)).toEqual(expect.arrayContaining([teamA, teamB]));
    expect((await ctl('admin', 'create', '--team', teamA, '--email', 'ops@a.example')).email).toBe('ops@a.example');
  }, 90_000); // seventeen audiencectl processes, each a Node start: seconds apiece on a loaded machine

  it('two gateway processes and one bridge: every action on every layout arrives exactly once', async () => {
    gateways = await Promise.all([spawnGateway(env), spawnGateway(env)]);
    children.push(...gateways.map((g) => g.child));
    const file = configFile({ redisUrl: 'redis://127.0.0.1:1', prefix, bridgeId: 'cluster-bridge', layouts: layouts.map((layoutId) => ({ layoutId, targets: [{ host: '127.0.0.1', port: sink.port }] })) });
    const bridge = await spawnBridge(['--config', file], { REDIS_CLUSTER_NODES: cluster.get().seeds });
    children.push(bridge.child);
    const sent: string[] = [];
    for (const [i, layoutId] of layouts.entries()) {
      const key = i < layouts.length - 2 ? keyA : keyB;
      const tok = await postJson(`${gateways[i % 2]!.url}/token`, { layoutId }, { 'x-api-key': key });
      expect(tok.status, JSON.stringify(tok.body)).toBe(200);
      for (let n = 0; n < 5; n++) {
        const value = `${layoutId}#${n}`;
        const r = await postAction(gateways[(i + n) % 2]!, tok.body.token as string, { layoutId, lid: 5, type: 'String', value });
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        sent.push(value);
      }
    }
    await eventually(() => sink.messages.length >= sent.length);
    await new Promise((r) => setTimeout(r, 300)); // nothing more may arrive
    expect(sink.messages.map((m) => m.args[0]!.value).sort()).toEqual([...sent].sort());
    // both gateways see every layout's displays
    const discovery = await call(`${gateways[1]!.url}/layout/${layouts[0]}`, { headers: { 'x-api-key': keyA } });
    expect(discovery.body.destinationCount).toBe(1);
  });

  it('an allow-listed key reaches only its layouts; another team’s key none of A’s', async () => {
    expect((await call(`${gateways[0]!.url}/layout/${layouts[1]}`, { headers: { 'x-api-key': listKey } })).status).toBe(200);
    expect((await call(`${gateways[1]!.url}/layout/${layouts[2]}`, { headers: { 'x-api-key': listKey } })).status).toBe(404);
    expect((await call(`${gateways[0]!.url}/layout/${layouts[0]}`, { headers: { 'x-api-key': keyB } })).status).toBe(404);
  });

  it('a page switch reaches both gateways (plain PUBLISH, which the cluster carries to every node)', async () => {
    const started = performance.now();
    await ctl('layout', 'activate', layouts[3]!, 'encore');
    const written = performance.now(); // audiencectl has connected, written and published
    await Promise.all(
      gateways.map((g) => eventually(async () => (await call(`${g.url}/layout/${layouts[3]}`, { headers: { 'x-api-key': keyA } })).body.activePageId === 'encore')),
    );
    recordFigure('cluster_page_switch_reaches_two_gateways_ms', performance.now() - written, 'ms', `after audiencectl returned (${Math.round(written - started)} ms); re-check every 5 s`);
  });

  it('signing-key rotate: new tokens carry the new kid on both gateways, older tokens keep verifying', async () => {
    const before = (await postJson(`${gateways[0]!.url}/token`, { layoutId: layouts[0] }, { 'x-api-key': keyA })).body.token as string;
    const { kid } = await ctl('signing-key', 'rotate');
    for (const g of gateways) {
      await eventually(async () => decodeProtectedHeader((await postJson(`${g.url}/token`, { layoutId: layouts[0] }, { 'x-api-key': keyA })).body.token as string).kid === kid);
      expect((await postAction(g, before, { layoutId: layouts[0], lid: 1, type: 'Button' })).status).toBe(200);
    }
  });

  it('an administrator signs in on one gateway, is signed in on the other, and signs out', async () => {
    const password = (await audiencectl(env, 'admin', 'reset-password', 'ops@a.example', '--json')).json.password as string;
    const admin = await signIn(gateways[0]!, 'ops@a.example', password);
    const cookie = admin.cookie;
    const session = await call(`${gateways[1]!.url}/admin/api/session`, { headers: { cookie } });
    expect(session.status).toBe(200);
    const out = await call(`${gateways[1]!.url}/admin/api/logout`, { method: 'POST', headers: { cookie, 'x-csrf-token': admin.csrf } });
    expect(out.status).toBe(200);
    expect((await call(`${gateways[0]!.url}/admin/api/session`, { headers: { cookie } })).status).toBe(401);
  });

  it("a bridge under its own Redis user (audiencectl bridge grant), set on every master and replica: actions, the crowd, a cue and presence; NOPERM elsewhere", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ac-acl-'));
    const crowdLayout = {
      layoutId: 'crowd-acl', name: 'Crowd', activePageId: 'main',
      pages: [{ pageId: 'main', name: 'Main', controls: [{ lid: 4, address: '/004', type: 'Index', props: { label: 'Colour' }, options: [{ index: 0, label: 'Red' }, { index: 1, label: 'Green' }], aggregate: { mode: 'votes', windowMs: 60_000, cue: { quorum: 3, share: 0.6, holdMs: 200 } } }] }],
    };
    writeFileSync(join(dir, 'crowd.json'), JSON.stringify(crowdLayout));
    await ctl('layout', 'import', '--team', teamB, join(dir, 'crowd.json'));
    const plain = layouts[layouts.length - 1]!;
    const grant = await ctl('bridge', 'grant', '--bridge-id', 'venue-c', '--layout', plain, '--layout', 'crowd-acl');
    for (const node of cluster.get().nodes) {
      const rules = await onNode(node.port, 'ACL', 'GETUSER', 'bridge-venue-c');
      expect(rules, `node ${node.port}`).toContain(`~${prefix}layout:{crowd-acl}:actions`);
    }
    const seeds = [grant.redisUrl as string, ...cluster.get().seeds.split(',').slice(1)].join(',');
    const own = new UdpSink();
    await own.start();
    const file = configFile({ redisUrl: 'redis://127.0.0.1:1', prefix, bridgeId: 'venue-c', layouts: [plain, 'crowd-acl'].map((layoutId) => ({ layoutId, tickHz: 100, targets: [{ host: '127.0.0.1', port: own.port }] })) });
    const bridge = await spawnBridge(['--config', file], { REDIS_CLUSTER_NODES: seeds });
    children.push(bridge.child);
    const token = async (layoutId: string) => (await postJson(`${gateways[0]!.url}/token`, { layoutId }, { 'x-api-key': keyB })).body.token as string;
    expect((await postAction(gateways[0]!, await token(plain), { layoutId: plain, lid: 5, type: 'String', value: 'own user' })).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await postAction(gateways[i % 2]!, await token('crowd-acl'), { layoutId: 'crowd-acl', lid: 4, type: 'Index', value: 1 })).status).toBe(200);
    await eventually(() => own.messages.some((m) => m.args[0]?.value === 'own user'));
    await eventually(() => own.messages.some((m) => m.address === '/004/n' && m.args[0]?.value === 3));
    await eventually(() => own.messages.some((m) => m.address === '/004/cue' && m.args[0]?.value === 1));
    await eventually(async () => (await call(`${gateways[1]!.url}/layout/crowd-acl`, { headers: { 'x-api-key': keyB } })).body.destinationCount === 1);
    // the bridge's credentials on the cluster: its keys only
    const as = new Cluster([{ host: '127.0.0.1', port: cluster.get().nodes[0]!.port }], { redisOptions: { username: grant.user, password: grant.password } });
    const refusal = (p: Promise<unknown>) => p.then(() => 'allowed', (e: Error) => e.message);
    expect(await refusal(as.hgetall(`${prefix}{signing-keys}`))).toMatch(/^NOPERM/);
    expect(await refusal(as.hgetall(`${prefix}{teams}`))).toMatch(/^NOPERM/);
    expect(await refusal(as.xadd(`${prefix}layout:{${layouts[0]}}:actions`, '*', 'a', '1'))).toMatch(/^NOPERM/);
    expect(await refusal(as.hset(`${prefix}layout:{crowd-acl}`, 'activePageId', 'x'))).toMatch(/^NOPERM/);
    expect(await refusal(as.hget(`${prefix}layout:{crowd-acl}`, 'version'))).toBe('allowed'); // read-only, for OSCQuery's descriptions
    as.disconnect();
    await stopProcess(bridge.child);
    await own.stop();
    expect((await ctl('bridge', 'revoke', '--bridge-id', 'venue-c')).deleted).toBe(true);
    for (const node of cluster.get().nodes) expect(await onNode(node.port, 'ACL', 'GETUSER', 'bridge-venue-c')).toBe('null');
  });

  it('key revoke: both gateways refuse the key and its tokens', async () => {
    const token = (await postJson(`${gateways[0]!.url}/token`, { layoutId: layouts[0] }, { 'x-api-key': keyA })).body.token as string;
    expect((await postAction(gateways[1]!, token, { layoutId: layouts[0], lid: 1, type: 'Button' })).status).toBe(200);
    await ctl('key', 'revoke', keyAId);
    for (const g of gateways) {
      expect((await postJson(`${g.url}/token`, { layoutId: layouts[0] }, { 'x-api-key': keyA })).body.error.code).toBe('api_key_revoked');
      await eventually(async () => (await postAction(g, token, { layoutId: layouts[0], lid: 1, type: 'Button' })).status === 401);
    }
  });
});
