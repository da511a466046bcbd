// A venue bridge under its own Redis user (audiencectl bridge grant): through a real gateway
// process and a real bridge process whose redisUrl is the one the command printed, it plays an
// action, the crowd's value and a cue on a liblo oscdump, and registers its display. With its
// credentials, every key of another owner answers NOPERM to reads and writes: signing keys, API
// keys, teams, admin sessions and another layout's keys; its own layout's definition it may read
// (OSCQuery describes the controls from it) but not write, and its light stream it may only append
// to. Revoked, it
// cannot connect. And the gateway's own user, the ACL line docs/operations.md gives, runs a gateway,
// audiencectl and the live channel with no NOPERM.
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisKeys } from '../../gateway/store/keys.js';
import { BRIDGE_FUNCTIONS } from '../../schemas/bridge-functions.js';
import { deadLetterKey } from '../../schemas/redis-keys.js';
import { createStores } from '../../gateway/store/stores.js';
import type { LayoutDefinition } from '../../schemas/types.js';
import { configFile, spawnBridge, stopProcess } from '../helpers/bridge.js';
import { audiencectl, audiencectlJson } from '../helpers/cli.js';
import { spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { eventually, mintToken, postAction } from '../helpers/gateway.js';
import { connectLive } from '../helpers/live.js';
import { startOscdump, type Oscdump } from '../helpers/oscdump.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';

const LAYOUT = 'acl-show';
const OTHER = 'acl-other';
const layoutDef = (layoutId: string): LayoutDefinition => ({
  layoutId,
  name: 'ACL show',
  activePageId: 'main',
  pages: [
    {
      pageId: 'main',
      name: 'Main',
      controls: [
        { lid: 4, address: '/004', type: 'Index', props: { label: 'Colour' }, options: [{ index: 0, label: 'Red' }, { index: 1, label: 'Green' }], aggregate: { mode: 'votes', windowMs: 60_000, cue: { quorum: 3, share: 0.6, holdMs: 200 } } },
        { lid: 5, address: '/005', type: 'String', props: { label: 'Shout' } },
      ],
    },
  ],
});

const redis = useRedis();
const prefix = randomPrefix();
const bridgeId = `venue-${Math.random().toString(36).slice(2, 8)}`;
let gateway: GatewayProcess;
let dump: Oscdump;
let apiKey: string;
const children: ChildProcess[] = [];
const env = () => ({ REDIS_URL: redis.get().server.url, REDIS_PREFIX: prefix });

beforeAll(async () => {
  const admin = new Redis(redis.get().server.url);
  const stores = createStores(admin, prefix);
  const team = await stores.teams.create('ACL team');
  await stores.layouts.import(team.teamId, layoutDef(LAYOUT));
  await stores.layouts.import(team.teamId, layoutDef(OTHER));
  apiKey = (await stores.apiKeys.create(team.teamId, { name: 'acl' })).apiKey;
  await stores.admins.create(team.teamId, 'tech@example.com', 'a long enough password').catch(() => {});
  admin.disconnect();
  gateway = await spawnGateway(env());
  children.push(gateway.child);
  dump = await startOscdump();
}, 30_000);
afterAll(async () => {
  for (const c of children) await stopProcess(c, 'SIGKILL');
  dump?.child.kill();
  await audiencectl(env(), 'bridge', 'revoke', '--bridge-id', bridgeId);
});

describe('a bridge under its own Redis user', () => {
  let grant: { user: string; password: string; redisUrl: string };

  it('gets a user for its layouts from audiencectl bridge grant, and plays an action, the crowd and a cue with it; its display is registered', async () => {
    grant = await audiencectlJson(env(), 'bridge', 'grant', '--bridge-id', bridgeId, '--layout', LAYOUT);
    expect(Object.keys(grant).sort()).toEqual(['password', 'redisUrl', 'user']);
    expect(grant.user).toBe(`bridge-${bridgeId}`);
    expect(grant.redisUrl).toBe(`redis://${grant.user}:${grant.password}@127.0.0.1:${redis.get().server.port}`);
    const file = configFile({ redisUrl: grant.redisUrl, prefix, bridgeId, layouts: [{ layoutId: LAYOUT, tickHz: 100, targets: [{ host: '127.0.0.1', port: dump.port }] }] });
    const bridge = await spawnBridge(['--config', file]);
    children.push(bridge.child);
    const token = await mintToken(gateway, LAYOUT, apiKey);
    expect((await postAction(gateway, token, { layoutId: LAYOUT, lid: 5, type: 'String', value: 'least privilege' })).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await postAction(gateway, await mintToken(gateway, LAYOUT, apiKey), { layoutId: LAYOUT, lid: 4, type: 'Index', value: 1 })).status).toBe(200);
    await eventually(() => dump.lines.some((l) => l.address === '/005' && l.tags === 's'));
    await eventually(() => dump.lines.some((l) => l.address === '/004/n' && l.values[0] === 3));
    await eventually(() => dump.lines.some((l) => l.address === '/004/cue' && l.values[0] === 1));
    const admin = new Redis(redis.get().server.url);
    expect(await admin.zrange(new RedisKeys(prefix).destinations(LAYOUT), 0, -1)).toEqual([`${bridgeId}|127.0.0.1:${dump.port}`]);
    admin.disconnect();
    expect(bridge.output()).not.toMatch(/NOPERM/);
  }, 30_000);

  it("reads its layout's definition (for OSCQuery's descriptions) and cannot change it", async () => {
    const as = new Redis(grant.redisUrl);
    expect(await as.hmget(new RedisKeys(prefix).layout(LAYOUT), 'version', 'activePageId')).toEqual([expect.stringMatching(/^\d+$/), expect.any(String)]);
    as.disconnect();
  });

  it("reads and writes nothing else: NOPERM on signing keys, API keys, teams, admin sessions, a layout definition's writes and another layout", async () => {
    const k = new RedisKeys(prefix);
    const as = new Redis(grant.redisUrl);
    const refused = async (what: string, command: Promise<unknown>) => {
      const error = await command.then(() => null, (e: Error) => e.message);
      expect(error, what).toMatch(/^NOPERM/);
    };
    await refused('signing keys read', as.hgetall(k.signingKeys()));
    await refused('signing keys write', as.hset(k.signingKeys(), 'sk_x', '{}'));
    await refused('current signing key', as.get(k.currentSigningKey()));
    await refused('API key read', as.hgetall(k.apiKey('anything')));
    await refused('API key write', as.hset(k.apiKey('anything'), 'revokedAt', '1'));
    await refused('teams read', as.hgetall(k.teams()));
    await refused('teams write', as.del(k.teams()));
    await refused('admin read', as.hgetall(k.admin('tech@example.com')));
    await refused('admin session read', as.hgetall(k.session('0'.repeat(64))));
    await refused('admin session write', as.hset(k.session('0'.repeat(64)), 'email', 'x'));
    await refused("the layout's definition write", as.hset(k.layout(LAYOUT), 'activePageId', 'x'));
    await refused("another layout's definition read", as.hgetall(k.layout(OTHER)));
    await refused("the layout's revocations", as.hgetall(k.revokedSubs(LAYOUT)));
    await refused("another layout's stream read", as.xrange(k.actions(OTHER), '-', '+'));
    await refused("another layout's stream write", as.xadd(k.actions(OTHER), '*', 'a', '1'));
    await refused("another layout's cues", as.hset(k.cues(OTHER), 'gen:page', '9'));
    await refused('every key at once', as.flushall());
    await refused('the key space', as.keys('*'));
    await refused('a command of its own on a foreign key', as.eval("return redis.call('GET', KEYS[1])", 1, k.currentSigningKey()));
    // no Lua of its own even on its own keys (a loop would make Redis answer BUSY to everyone)
    await refused('EVAL on its own stream', as.eval('while true do end', 1, k.actions(LAYOUT)));
    await refused('EVALSHA', as.evalsha('0'.repeat(40), 1, k.actions(LAYOUT)));
    await refused('loading a function', as.call('FUNCTION', 'LOAD', "#!lua name=x\nredis.register_function('x', function() return 1 end)"));
    // each command reaches only the key it is for, and only what docs/venue.md says it reads
    await refused("adding to its own action stream", as.xadd(k.actions(LAYOUT), '*', 'action', '{}'));
    await refused("its layout's whole definition", as.hgetall(k.layout(LAYOUT)));
    await refused('another database', as.call('SELECT', '1'));
    await refused("moving its stream's expiry", as.pexpire(k.actions(LAYOUT), 1000));
    await refused('its dead letters read back', as.xrange(deadLetterKey(prefix, LAYOUT), '-', '+'));
    // its light stream: append only (the looks its light OSC input plays), and only its own layout's
    await refused('its light stream read back', as.xrange(k.lightStream(LAYOUT), '-', '+'));
    await refused('its light stream trimmed', as.xtrim(k.lightStream(LAYOUT), 'MAXLEN', 0));
    await refused('its light stream deleted', as.del(k.lightStream(LAYOUT)));
    await refused("another layout's light stream", as.xadd(k.lightStream(OTHER), '*', 'look', '{"zone":"*"}'));
    expect(await as.xadd(k.lightStream(LAYOUT), 'MAXLEN', '~', 1000, '*', 'look', '{"zone":"*"}')).toMatch(/^\d+-\d+$/);
    // its functions bound what they write, whoever calls them
    const huge = JSON.stringify({ value: [1], n: 1, pad: 'x'.repeat(1 << 20) });
    const bounded = await as.fcall(BRIDGE_FUNCTIONS.sampleCrowd, 2, k.showRecord(LAYOUT).stream, k.showRecord(LAYOUT).state, 900, 1000, 1 << 30, 4, huge).then(() => 'written', (e: Error) => e.message);
    expect(bounded).toMatch(/a crowd value is longer than 16384 bytes/);
    await refused('pub/sub', as.publish(k.invalidationChannel(), 'x'));
    await refused('ACL', as.call('ACL', 'LIST'));
    await refused('CONFIG', as.call('CONFIG', 'GET', '*'));
    as.disconnect();
  });

  it('a new grant disconnects the connections of the old password at once', async () => {
    const old = new Redis(grant.redisUrl, { maxRetriesPerRequest: 0, retryStrategy: () => null });
    old.on('error', () => {}); // its end is what this test waits for
    const k = new RedisKeys(prefix);
    expect(await old.hget(k.layout(LAYOUT), 'version')).toMatch(/^\d+$/);
    const closed = new Promise<void>((resolve) => old.once('end', () => resolve()));
    grant = await audiencectlJson(env(), 'bridge', 'grant', '--bridge-id', bridgeId, '--layout', LAYOUT);
    await closed; // the server ended it: no command of the old password gets through any more
    expect(await old.hget(k.layout(LAYOUT), 'version').then(() => 'answered', (e: Error) => e.message)).not.toBe('answered');
    old.disconnect();
    const fresh = new Redis(grant.redisUrl);
    expect(await fresh.hget(k.layout(LAYOUT), 'version')).toMatch(/^\d+$/);
    fresh.disconnect();
  });

  it('cannot connect once revoked', async () => {
    expect(await audiencectlJson(env(), 'bridge', 'revoke', '--bridge-id', bridgeId)).toEqual({ user: `bridge-${bridgeId}`, deleted: true });
    const as = new Redis(grant.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    const errors: string[] = [];
    as.on('error', (e: Error) => errors.push(e.message));
    await expect(as.connect()).rejects.toThrow();
    expect(errors.join(' ')).toMatch(/WRONGPASS|invalid username-password/);
    as.disconnect();
  });
});

describe("the gateway's own Redis user, as docs/operations.md gives it", () => {
  it('runs a gateway, audiencectl and the live channel with no NOPERM, and refuses what administers Redis', async () => {
    const line = /^\s*(ACL SETUSER audience-gateway .+)$/m.exec(readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8'))![1]!;
    const user = `gw-${Math.random().toString(36).slice(2, 8)}`;
    const password = 'gateway-password-for-this-test';
    const args = line.split(/\s+/).slice(1).map((a) => a.replace('audience-gateway', user).replace('>PASSWORD', `>${password}`).replaceAll('ac:', prefix));
    const admin = new Redis(redis.get().server.url);
    await admin.call('ACL', ...args);
    const url = `redis://${user}:${password}@127.0.0.1:${redis.get().server.port}`;
    const asGateway = { REDIS_URL: url, REDIS_PREFIX: prefix };
    try {
      const teamId = (await audiencectlJson(asGateway, 'team', 'create', '--name', 'Own user')).teamId as string;
      const key = (await audiencectlJson(asGateway, 'key', 'create', '--team', teamId)).apiKey as string;
      expect(key).toMatch(/\./);
      const gw = await spawnGateway(asGateway);
      children.push(gw.child);
      const token = await mintToken(gw, LAYOUT, apiKey);
      expect((await postAction(gw, token, { layoutId: LAYOUT, lid: 5, type: 'String', value: 'gateway user' })).status).toBe(200);
      const live = await connectLive(gw.url, token);
      expect(live.frames[0]!.op).toBe('page');
      await audiencectlJson(asGateway, 'layout', 'activate', LAYOUT, 'main');
      expect((await fetch(`http://127.0.0.1:${gw.opsPort}/readyz`)).status).toBe(200);
      live.ws.close();
      await stopProcess(gw.child);
      expect(gw.output()).not.toMatch(/NOPERM/);
      const as = new Redis(url);
      for (const command of [['FLUSHALL'], ['KEYS', '*'], ['CONFIG', 'GET', '*'], ['ACL', 'LIST'], ['GET', 'another-prefix:x']]) {
        expect(await as.call(command[0]!, ...command.slice(1)).then(() => 'allowed', (e: Error) => e.message), command.join(' ')).toMatch(/^NOPERM/);
      }
      as.disconnect();
    } finally {
      await admin.call('ACL', 'DELUSER', user);
      admin.disconnect();
    }
  }, 30_000);
});
