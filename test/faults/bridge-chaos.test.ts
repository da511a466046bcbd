// Chaos on real processes: what can reach a running bridge from Redis must not stop the output.
// (a) pending entries deleted while the bridge was down; (b) Redis restarted empty under a running
// gateway and bridge; (c) a read loop forced into constant errors, which the watchdog must see.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { startRedisServer } from '../../dev/redis-server.js';
import { ACTION_FIELD, encodeActionEntry } from '../../schemas/action-entry.js';
import { actionStreamKey } from '../../schemas/redis-keys.js';
import type { ActionEntry } from '../../schemas/types.js';
import { configFile, spawnBridge, stopProcess } from '../helpers/bridge.js';
import { audiencectlJson } from '../helpers/cli.js';
import { recordFigure } from '../helpers/figures.js';
import { spawnGateway } from '../helpers/gateway-process.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { DEMO_LAYOUT, eventually, postAction, postJson } from '../helpers/gateway.js';
import { startFakeNotifySocket } from '../helpers/notify-socket.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';
import { UdpSink } from '../helpers/udp-sink.js';

const redis = useRedis();
const children: ChildProcess[] = [];
const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of children) await stopProcess(c, 'SIGKILL');
  for (const c of cleanups.reverse()) await c();
});

async function sink(): Promise<UdpSink> {
  const s = new UdpSink();
  await s.start();
  cleanups.push(() => s.stop());
  return s;
}

const entry = (value: string): ActionEntry => ({ v: 1, id: `c-${value}-${Math.random()}`, layoutId: 'show', lid: 5, address: '/005', type: 'String', value, ts: Date.now() });
const readyz = async (port: number) => {
  const r = await fetch(`http://127.0.0.1:${port}/readyz`);
  return { status: r.status, text: await r.text() };
};
const opsPortOf = (output: string) => Number(/"opsPort":(\d+)/.exec(output)![1]);

describe('bridge chaos', () => {
  it('(d) entries trimmed before the bridge read them are counted as lost (trimmed_unread), and its lag is right again', async () => {
    const s = await sink();
    const prefix = randomPrefix();
    const key = actionStreamKey(prefix, 'show');
    const c = redis.get().client;
    const file = configFile({ redisUrl: redis.get().server.url, prefix, bridgeId: 'chaos-d', layouts: [{ layoutId: 'show', targets: [{ host: '127.0.0.1', port: s.port }] }] });
    // the bridge's group is where it left off (it has read and acked an entry); 300 entries arrive and
    // are trimmed away before it reads them
    await c.xgroup('CREATE', key, 'bridge:chaos-d', '$', 'MKSTREAM');
    await c.xadd(key, '*', ACTION_FIELD, encodeActionEntry(entry('warm')));
    const [[, [[warm]]]] = (await c.call('XREADGROUP', 'GROUP', 'bridge:chaos-d', 'chaos-d', 'COUNT', 1, 'STREAMS', key, '>')) as [[string, [[string]]]];
    await c.xack(key, 'bridge:chaos-d', warm);
    for (let i = 0; i < 300; i++) await c.xadd(key, '*', ACTION_FIELD, encodeActionEntry(entry(`unread-${i}`)));
    await c.xtrim(key, 'MAXLEN', 0);
    for (let i = 0; i < 5; i++) await c.xadd(key, '*', ACTION_FIELD, encodeActionEntry(entry(`kept-${i}`)));
    const { child, output } = await spawnBridge(['--config', file]);
    children.push(child);
    await eventually(() => s.messages.filter((m) => String(m.args[0]!.value).startsWith('kept-')).length === 5);
    const metricsOf = async () => (await fetch(`http://127.0.0.1:${opsPortOf(output())}/metrics`)).text();
    await eventually(async () => (await metricsOf()).includes('audience_bridge_entries_lost_total{layout="show",reason="trimmed_unread"} 300'));
    await eventually(async () => (await metricsOf()).includes('audience_bridge_consumer_lag_entries{layout="show"} 0'));
    expect(output()).toMatch(/entries lost unread/);
    // and nothing more is counted as the bridge goes on
    for (let i = 0; i < 20; i++) await c.xadd(key, '*', ACTION_FIELD, encodeActionEntry(entry(`later-${i}`)));
    await eventually(() => s.messages.filter((m) => String(m.args[0]!.value).startsWith('later-')).length === 20);
    await new Promise((r) => setTimeout(r, 1200)); // the lag and loss timer has had time to run
    await eventually(async () => (await metricsOf()).includes('audience_bridge_consumer_lag_entries{layout="show"} 0')); // a loaded machine may run it late
    expect(await metricsOf()).toContain('audience_bridge_entries_lost_total{layout="show",reason="trimmed_unread"} 300');
    await stopProcess(child, 'SIGTERM');
  });

  it('(e) 40 entries trimmed before the bridge had them, some delivered to reads whose replies the link lost: 40 counted as trimmed_unread', async () => {
    const s = await sink();
    const proxy = new FaultProxy({ targets: () => [redis.get().server.port] });
    await proxy.start();
    cleanups.push(() => proxy.stop());
    const prefix = randomPrefix();
    const key = actionStreamKey(prefix, 'show');
    const c = redis.get().client;
    const file = configFile({ redisUrl: `redis://127.0.0.1:${proxy.port}`, prefix, bridgeId: 'chaos-e', layouts: [{ layoutId: 'show', targets: [{ host: '127.0.0.1', port: s.port }] }] });
    const { child, output } = await spawnBridge(['--config', file]);
    children.push(child);
    await c.xadd(key, '*', ACTION_FIELD, encodeActionEntry(entry('warm')));
    await eventually(() => s.messages.length === 1);
    // The link vanishes under the bridge's blocking read and the one queued behind it (and, on a
    // slow machine, a read made after a timeout): Redis hands each of them one of the 40, and their
    // replies never arrive. All 40 are trimmed away before the link comes back.
    proxy.vanish();
    for (let i = 0; i < 40; i++) await c.xadd(key, '*', ACTION_FIELD, encodeActionEntry(entry(`unread-${i}`)));
    const lostReads = ((await c.xpending(key, 'bridge:chaos-e')) as [number])[0];
    expect(lostReads).toBeGreaterThanOrEqual(1);
    expect(lostReads).toBeLessThan(40);
    await c.xtrim(key, 'MAXLEN', 0);
    for (let i = 0; i < 5; i++) await c.xadd(key, '*', ACTION_FIELD, encodeActionEntry(entry(`kept-${i}`)));
    proxy.cut();
    proxy.restore();
    await eventually(() => s.messages.filter((m) => String(m.args[0]!.value).startsWith('kept-')).length === 5, 10_000);
    const metricsOf = async () => (await fetch(`http://127.0.0.1:${opsPortOf(output())}/metrics`)).text();
    const lost = async () => (await metricsOf()).split('\n').filter((l) => l.startsWith('audience_bridge_entries_lost_total{layout="show"'));
    await eventually(async () => (await lost()).includes('audience_bridge_entries_lost_total{layout="show",reason="trimmed_unread"} 40')).catch(() => {});
    // every one of the 40 counted once, as unread: the failure shows the counts by reason
    expect((await lost()).filter((l) => /reason="trimmed(_unread)?"/.test(l)).sort()).toEqual(['audience_bridge_entries_lost_total{layout="show",reason="trimmed"} 0', 'audience_bridge_entries_lost_total{layout="show",reason="trimmed_unread"} 40']);
    expect(s.messages.some((m) => String(m.args[0]!.value).startsWith('unread-'))).toBe(false);
    await eventually(async () => ((await c.xpending(key, 'bridge:chaos-e')) as [number])[0] === 0);
    await stopProcess(child, 'SIGTERM');
  });

  it('(a) pending entries deleted while the bridge was down: on start it delivers new entries within 1 s', async () => {
    const s = await sink();
    const prefix = randomPrefix();
    const key = actionStreamKey(prefix, 'show');
    const c = redis.get().client;
    const file = configFile({ redisUrl: redis.get().server.url, prefix, bridgeId: 'chaos-a', layouts: [{ layoutId: 'show', targets: [{ host: '127.0.0.1', port: s.port }] }] });
    // what a crash leaves: entries this bridge's consumer read and never acked...
    await c.xgroup('CREATE', key, 'bridge:chaos-a', '$', 'MKSTREAM');
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) ids.push((await c.xadd(key, '*', ACTION_FIELD, encodeActionEntry(entry(`old-${i}`))))!);
    await c.call('XREADGROUP', 'GROUP', 'bridge:chaos-a', 'chaos-a', 'COUNT', 100, 'STREAMS', key, '>');
    // ...then trimmed away while it was down (MAXLEN ~ on a busy stream)
    await c.xtrim(key, 'MAXLEN', 0);
    const { child, output } = await spawnBridge(['--config', file]);
    children.push(child);
    const sent = performance.now();
    await c.xadd(key, '*', ACTION_FIELD, encodeActionEntry(entry('new')));
    await eventually(() => s.messages.some((m) => m.args[0]!.value === 'new'), 1000);
    const ms = performance.now() - sent;
    recordFigure('bridge_trimmed_pending_first_delivery_ms', ms, 'ms', '< 1000 after start');
    expect(s.messages.map((m) => m.args[0]!.value)).toEqual(['new']);
    expect(output()).toMatch(/pending entries lost: their data was trimmed or deleted/);
    const metrics = await (await fetch(`http://127.0.0.1:${opsPortOf(output())}/metrics`)).text();
    expect(metrics).toContain('audience_bridge_entries_lost_total{layout="show",reason="trimmed"} 50');
    await eventually(async () => ((await c.xpending(key, 'bridge:chaos-a')) as [number])[0] === 0);
  });

  it('(b) Redis restarted empty under a running gateway and bridge: after re-import and a new key, actions flow within 5 s, no restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ac-redis-'));
    const server = await startRedisServer({ dir, appendOnly: false }); // no persistence: a restart comes back empty
    cleanups.push(async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    });
    const env = { REDIS_URL: server.url, REDIS_PREFIX: 'chaos:' };
    const layoutFile = join(dir, 'layout.json');
    writeFileSync(layoutFile, JSON.stringify(DEMO_LAYOUT));
    const seed = async (): Promise<string> => {
      const teamId = (await audiencectlJson(env, 'team', 'create', '--name', 'Chaos')).teamId as string;
      await audiencectlJson(env, 'layout', 'import', '--team', teamId, layoutFile);
      return (await audiencectlJson(env, 'key', 'create', '--team', teamId)).apiKey as string;
    };
    const firstKey = await seed();

    const gw = await spawnGateway(env);
    const gateway = gw.child;
    children.push(gateway);
    const api = gw.url;
    const s = await sink();
    const file = configFile({ redisUrl: server.url, prefix: 'chaos:', bridgeId: 'chaos-b', layouts: [{ layoutId: DEMO_LAYOUT.layoutId, targets: [{ host: '127.0.0.1', port: s.port }] }] });
    const bridge = await spawnBridge(['--config', file]);
    children.push(bridge.child);

    const act = async (apiKey: string, value: string): Promise<number> => {
      const tok = await postJson(`${api}/token`, { layoutId: DEMO_LAYOUT.layoutId }, { 'x-api-key': apiKey });
      if (tok.status !== 200) return tok.status;
      return (await postAction({ url: api }, tok.body.token as string, { layoutId: DEMO_LAYOUT.layoutId, lid: 5, type: 'String', value })).status;
    };
    expect(await act(firstKey, 'before')).toBe(200);
    await eventually(() => s.messages.some((m) => m.args[0]!.value === 'before'));

    await server.kill();
    await server.restart(); // empty: no AOF, no RDB
    const restarted = performance.now();
    const apiKey = await seed(); // the operator imports the layout again and creates a key
    const reseeded = performance.now();
    await eventually(async () => (await act(apiKey, 'after')) === 200);
    const accepted = performance.now();
    await eventually(() => s.messages.some((m) => m.args[0]!.value === 'after'));
    const delivered = performance.now();
    recordFigure('redis_empty_restart_reseed_ms', reseeded - restarted, 'ms', 'audiencectl team create + layout import + key create');
    recordFigure('redis_empty_restart_action_accepted_ms', accepted - reseeded, 'ms', 'after the re-seed; < 5000');
    recordFigure('redis_empty_restart_delivered_ms', delivered - reseeded, 'ms', 'after the re-seed; < 5000');
    expect(delivered - reseeded).toBeLessThan(5000);
    expect(gateway.exitCode).toBeNull();
    expect(bridge.child.exitCode).toBeNull();
    expect(bridge.output()).toMatch(/consumer group was missing/);
    expect((await readyz(opsPortOf(bridge.output()))).status).toBe(200);
  });

  it('(c) a read loop in constant errors stops WATCHDOG=1 within WatchdogSec, and /readyz says why', async () => {
    const fake = await startFakeNotifySocket();
    children.push(fake.child);
    const prefix = randomPrefix();
    const key = actionStreamKey(prefix, 'show');
    const file = configFile({ redisUrl: redis.get().server.url, prefix, bridgeId: 'chaos-c', layouts: [{ layoutId: 'show', targets: [{ host: '127.0.0.1', port: 9 }] }] });
    const watchdogSec = 1;
    const { child, output } = await spawnBridge(['--config', file], { NOTIFY_SOCKET: fake.path, WATCHDOG_USEC: String(watchdogSec * 1_000_000) });
    children.push(child);
    await eventually(() => fake.pings.length >= 2);
    const c = new Redis(redis.get().server.url);
    cleanups.push(() => Promise.resolve(c.disconnect()));
    // the stream key now holds a string: every XREADGROUP fails with WRONGTYPE, and so does re-creating the group
    await c.multi().del(key).set(key, 'not a stream').exec();
    const brokenAt = performance.now();
    await eventually(async () => /layout show: stream reads failing for \d+ ms \(WRONGTYPE/.test((await readyz(opsPortOf(output()))).text), 3000);
    expect((await readyz(opsPortOf(output()))).status).toBe(503);
    await new Promise((r) => setTimeout(r, watchdogSec * 1000 * 2));
    const lastPing = Math.max(...fake.pings);
    const silentFrom = Math.max(lastPing, brokenAt);
    recordFigure('bridge_failing_reads_last_ping_after_ms', lastPing - brokenAt, 'ms', `< WatchdogSec (${watchdogSec * 1000} ms)`);
    expect(lastPing - brokenAt).toBeLessThan(watchdogSec * 1000);
    expect(performance.now() - silentFrom).toBeGreaterThan(watchdogSec * 1000); // systemd would restart it now
    // repaired: the loop recovers by itself and the pings resume
    await c.del(key);
    const repaired = performance.now();
    await eventually(() => fake.pings.some((p) => p > repaired));
    expect((await readyz(opsPortOf(output()))).status).toBe(200);
  });
});
