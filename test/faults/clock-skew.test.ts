// Hosts whose clocks nobody set, with Debian's libfaketime (the process's clock shifted, Redis's and the test's
// true): a bridge 5 s ahead or behind, and a gateway 5 s ahead, play every action and drop none as
// too old, and say how far off their clock is (metric, /readyz note); two bridges 6 s apart stamp
// one action with timetags that name the same true instant, within the accuracy they state; and a
// bridge that drops every entry it reads says so on /readyz within seconds.
import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACTION_FIELD } from '../../schemas/action-entry.js';
import { actionStreamKey } from '../../schemas/redis-keys.js';
import { configFile, spawnBridge, stopProcess } from '../helpers/bridge.js';
import { spawnGateway } from '../helpers/gateway-process.js';
import { DEMO_LAYOUT, eventually, mintToken, postAction, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { sample, scrape } from '../helpers/metrics.js';
import { startFakeNotifySocket } from '../helpers/notify-socket.js';
import { startOscdump, type Oscdump } from '../helpers/oscdump.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
let t: TestGateway;
let plain: Redis;
const children: ChildProcess[] = [];
const dumps: Oscdump[] = [];

beforeAll(async () => {
  t = await startTestGateway({ redisUrl: redis.get().server.url });
  plain = new Redis(redis.get().server.url);
});
afterAll(async () => {
  for (const c of children) await stopProcess(c, 'SIGKILL');
  for (const d of dumps) d.child.kill('SIGKILL');
  plain.disconnect();
  await t.close();
});

/**
 * The environment that shifts a process's clock by `shift` (Debian's libfaketime, as the faketime
 * command sets it): preloaded into node itself, so the process the test holds is node and a kill
 * reaches it (the faketime command forks it as a child that would outlive the wrapper's kill).
 */
const fakeClock = (shift: string): Record<string, string> => ({ LD_PRELOAD: '/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1', FAKETIME: shift });

async function display(): Promise<Oscdump> {
  const d = await startOscdump();
  dumps.push(d);
  return d;
}

/** A bridge process (its clock shifted by `shift`, as faketime reads it) for the test's layout; its ops port. */
async function bridge(layoutId: string, shift: string | null, targets: Oscdump[], extra: Record<string, unknown> = {}, env: Record<string, string> = {}): Promise<{ opsPort: number; output: () => string }> {
  const bridgeId = `skew-${Math.random().toString(36).slice(2, 8)}`;
  const file = configFile({ redisUrl: redis.get().server.url, prefix: t.config.redisPrefix, bridgeId, layouts: [{ layoutId, targets: targets.map((d) => ({ host: '127.0.0.1', port: d.port })), ...extra }] });
  const b = await spawnBridge(['--config', file], { LOG_LEVEL: 'info', ...env, ...(shift !== null && fakeClock(shift)) }, 15_000);
  children.push(b.child);
  const opsPort = Number(/"opsPort":(\d+)/.exec(b.output())?.[1]);
  return { opsPort, output: b.output };
}

/** A layout of its own for a test (a bridge's first read takes the last maxAgeMs of its stream), and a token for it. */
let layouts = 0;
async function newLayout(): Promise<{ layoutId: string; token: string }> {
  const layoutId = `skew-${++layouts}`;
  await t.admin.layouts.import(t.teamId, { ...DEMO_LAYOUT, layoutId });
  return { layoutId, token: await mintToken(t, layoutId, t.apiKey) };
}

async function readyz(port: number): Promise<{ status: number; text: string }> {
  const r = await fetch(`http://127.0.0.1:${port}/readyz`);
  return { status: r.status, text: await r.text() };
}

describe('clocks nobody set', () => {
  it.each([
    ['+5s', -5],
    ['-5s', 5],
  ])('a bridge whose clock is %s plays every action and drops none as too old; it shows the offset and says so', async (shift, offsetSeconds) => {
    const d = await display();
    const systemd = await startFakeNotifySocket();
    children.push(systemd.child);
    const l = await newLayout();
    const b = await bridge(l.layoutId, shift, [d], {}, { NOTIFY_SOCKET: systemd.path });
    const lines = await sendAndCount(t.url, l, d, 10, `bridge${shift}`);
    expect(lines).toBe(10);
    const m = await scrape(b.opsPort);
    expect(sample(m, `audience_bridge_dropped_stale_total{layout="${l.layoutId}"}`)).toBe(0);
    expect(sample(m, `audience_bridge_dead_lettered_total{layout="${l.layoutId}"}`)).toBe(0);
    expect(sample(m, 'audience_bridge_clock_offset_seconds')).toBeCloseTo(offsetSeconds, 1);
    const r = await readyz(b.opsPort);
    expect(r.status).toBe(200);
    expect(r.text).toMatch(new RegExp(`clock is (49\\d\\d|50\\d\\d) ms ${offsetSeconds < 0 ? 'ahead of' : 'behind'} Redis's \\(bound 1000 ms`));
    expect(b.output()).toMatch(/this host's clock is far from Redis's/);
    expect(systemd.text()).toMatch(/READY=1[^]*STATUS=read \d+, [^\n]*; this host's clock is (49|50)\d\d ms/);
  }, 40_000);

  it('a gateway whose clock is +5 s stamps in Redis time: every action plays, none stale, and it says so (metric, /readyz, STATUS, log)', async () => {
    const d = await display();
    const l = await newLayout();
    await bridge(l.layoutId, null, [d]);
    const systemd = await startFakeNotifySocket();
    children.push(systemd.child);
    const gw = await spawnGateway({ REDIS_URL: redis.get().server.url, REDIS_PREFIX: t.config.redisPrefix, NOTIFY_SOCKET: systemd.path, ...fakeClock('+5s') }, 20_000);
    children.push(gw.child);
    await eventually(() => /READY=1[^]*STATUS=listening on [^\n]*; this host's clock is (49|50)\d\d ms ahead of Redis's/.test(systemd.text()));
    const gwToken = await mintToken({ ...t, url: gw.url }, l.layoutId, t.apiKey);
    const lines = await sendAndCount(gw.url, { layoutId: l.layoutId, token: gwToken }, d, 10, 'gateway+5s');
    expect(lines).toBe(10);
    const m = await scrape(gw.opsPort);
    expect(sample(m, 'audience_gateway_clock_offset_seconds')).toBeCloseTo(-5, 1);
    const r = await readyz(gw.opsPort);
    expect(r.status).toBe(200);
    expect(r.text).toMatch(/clock is (49\d\d|50\d\d) ms ahead of Redis's \(bound 1000 ms/);
    expect(gw.output()).toMatch(/this host's clock is far from Redis's/);
    // the stored stamps are Redis's time, not the gateway host's
    const ts = await newestStamp(l.layoutId);
    expect(Math.abs(ts - Date.now())).toBeLessThan(2000);
  }, 40_000);

  it('gateway workers whose host clock is -5 s: the supervisor\'s /readyz, STATUS and metrics say so', async () => {
    const systemd = await startFakeNotifySocket();
    children.push(systemd.child);
    const gw = await spawnGateway({ REDIS_URL: redis.get().server.url, REDIS_PREFIX: t.config.redisPrefix, GATEWAY_WORKERS: '2', NOTIFY_SOCKET: systemd.path, ...fakeClock('-5s') }, 20_000);
    children.push(gw.child);
    await eventually(async () => /clock is (49|50)\d\d ms behind Redis's/.test((await readyz(gw.opsPort)).text));
    expect((await readyz(gw.opsPort)).status).toBe(200);
    expect(sample(await scrape(gw.opsPort), 'audience_gateway_clock_offset_seconds')).toBeCloseTo(5, 1); // the workers' average
    await eventually(() => /STATUS=2 workers listening on [^\n]*; this host's clock is (49|50)\d\d ms behind/.test(systemd.text()));
  }, 40_000);

  it('two bridges 6 s apart stamp one action with timetags naming the same true instant, within their stated accuracy', async () => {
    const [da, db] = [await display(), await display()];
    const l = await newLayout();
    const a = await bridge(l.layoutId, '+3s', [da], { playoutDelayMs: 300 });
    const b = await bridge(l.layoutId, '-3s', [db], { playoutDelayMs: 300 });
    const value = `both-${Date.now()}`;
    expect((await postAction(t, l.token, { layoutId: l.layoutId, lid: 5, type: 'String', value })).status).toBe(200);
    const tagged = (d: Oscdump) => d.lines.find((l) => l.address === '/005' && l.raw.includes(value))?.timetag ?? null;
    await eventually(() => tagged(da) !== null && tagged(db) !== null);
    const accuracyMs = async (port: number) => sample(await scrape(port), 'audience_bridge_clock_accuracy_seconds') * 1000;
    const [accA, accB] = [await accuracyMs(a.opsPort), await accuracyMs(b.opsPort)];
    // each timetag in its own host's clock; taken back to true time, both name the same instant:
    // the entry's stamp (Redis's time) plus the play-out delay
    const trueA = tagged(da)! - 3000;
    const trueB = tagged(db)! + 3000;
    const ts = await newestStamp(l.layoutId);
    const slackMs = 2; // Date.now()'s millisecond steps on each side
    expect(Math.abs(trueA - trueB)).toBeLessThanOrEqual(accA + accB + slackMs);
    expect(Math.abs(trueA - (ts + 300))).toBeLessThanOrEqual(accA + slackMs);
    expect(Math.abs(trueB - (ts + 300))).toBeLessThanOrEqual(accB + slackMs);
  }, 40_000);

  it('a bridge that drops every entry it reads says so on /readyz (503, with the reason) within seconds, and stops saying so once it plays again', async () => {
    const d = await display();
    const l = await newLayout();
    const b = await bridge(l.layoutId, null, [d]);
    const stream = actionStreamKey(t.config.redisPrefix, l.layoutId);
    const started = Date.now();
    for (let i = 0; i < 10; i++) await plain.xadd(stream, '*', ACTION_FIELD, '{"not":"an action"}');
    await eventually(async () => (await readyz(b.opsPort)).status === 503);
    expect(Date.now() - started).toBeLessThan(5000);
    const r = await readyz(b.opsPort);
    expect(r.text).toMatch(new RegExp(`layout ${l.layoutId}: dropped all 10 entries of the last 5 s and played none: 10 dead-lettered`));
    // the log line is written in the same step; it reaches this process through a pipe, a moment later
    await eventually(() => /a layout drops every entry it reads/.test(b.output()));
    expect(await sendAndCount(t.url, l, d, 1, 'again')).toBe(1);
    await eventually(async () => (await readyz(b.opsPort)).status === 200);
  }, 40_000);
});

/** Posts `n` String actions to `l` through the gateway at `base`, 50 ms apart; how many of them `d` printed. */
async function sendAndCount(base: string, l: { layoutId: string; token: string }, d: Oscdump, n: number, tag: string): Promise<number> {
  for (let i = 0; i < n; i++) {
    const r = await postAction({ url: base }, l.token, { layoutId: l.layoutId, lid: 5, type: 'String', value: `${tag}-${i}` });
    expect(r.status).toBe(200);
    await new Promise((res) => setTimeout(res, 50));
  }
  const count = () => d.lines.filter((l) => l.address === '/005' && l.raw.includes(`"${tag}-`)).length;
  // a bound a loaded 2-core machine meets (5 s was missed once in a full suite); it ends once they are all there
  await eventually(() => count() >= n, 15_000).catch(() => {});
  await new Promise((res) => setTimeout(res, 200)); // and no more
  return count();
}

/** The `ts` of the layout's newest stream entry (what the gateway stamped). */
async function newestStamp(layoutId: string): Promise<number> {
  const [newest] = (await plain.xrevrange(actionStreamKey(t.config.redisPrefix, layoutId), '+', '-', 'COUNT', 1)) as [string, string[]][];
  const fields = newest![1];
  return (JSON.parse(fields[fields.indexOf(ACTION_FIELD) + 1]!) as { ts: number }).ts;
}
