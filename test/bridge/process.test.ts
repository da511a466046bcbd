// audience-bridge as systemd runs it: configuration checks, sd_notify on a fake NOTIFY_SOCKET,
// kill -9 and restart, and the destinations it registers.
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { BRIDGE_BIN, configFile, runBridge, spawnBridge, stopProcess } from '../helpers/bridge.js';
import { DEMO_LAYOUT, eventually, getLayout, postAction, useGatewayWithToken } from '../helpers/gateway.js';
import { sample, scrape } from '../helpers/metrics.js';
import { useRedis } from '../helpers/redis.js';
import { startFakeNotifySocket } from '../helpers/notify-socket.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { UdpSink } from '../helpers/udp-sink.js';

const redis = useRedis();
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});

describe('--check-config', () => {
  const base = { redisUrl: 'redis://127.0.0.1:1', prefix: 'x:' };
  it('accepts a valid file and says what it serves', async () => {
    const r = await runBridge(['--config', configFile({ ...base, layouts: [{ layoutId: 'show', targets: [{ host: '10.0.0.5', port: 9000, booleans: 'TF' }] }] }), '--check-config']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('configuration OK (1 layout(s)');
  });

  it.each([
    [{ layoutId: 'show', targets: [{ host: 'a', port: 9000 }], colour: 'red' }, /layouts\[0\]: unknown key "colour"/],
    [{ layoutId: 'show', targets: [{ host: 'a', port: 70000 }] }, /layouts\[0\]\.targets\[0\]\.port must be at most 65535/],
    [{ layoutId: 'show', targets: [{ host: 'a', port: 9000, booleans: 'yes' }] }, /layouts\[0\]\.targets\[0\]\.booleans must be one of: int, TF/],
    [{ layoutId: 'show', targets: [] }, /layouts\[0\]\.targets must list at least 1 target/],
    [{ layoutId: 'show', tickHz: 0, targets: [{ host: 'a', port: 1 }] }, /layouts\[0\]\.tickHz must be at least 1/],
    [{ layoutId: 'show', tickHz: 'fast', targets: [{ host: 'a', port: 1 }] }, /layouts\[0\]\.tickHz must be a whole number/],
    [{ targets: [{ host: 'a', port: 1 }] }, /missing "layoutId"/],
  ])('refuses %j, naming the bad key', async (layout, message) => {
    const r = await runBridge(['--config', configFile({ ...base, layouts: [layout] }), '--check-config']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
  });

  it('says an empty layouts list in words: at least one layout', async () => {
    const r = await runBridge(['--config', configFile({ ...base, layouts: [] }), '--check-config']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/layouts must list at least 1 layout/);
    expect(r.stderr).not.toMatch(/must NOT have/);
  });

  it('tells a file it could read but not parse by line and column', async () => {
    const file = configFile({ ...base, layouts: [{ layoutId: 'show', targets: [{ host: 'a', port: 1 }] }] });
    writeFileSync(file, '{\n  "layouts": [\n    { "layoutId": "show",\n');
    const r = await runBridge(['--config', file, '--check-config']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/is not valid JSON \(line 4, column 1\)/);
    expect(r.stderr).not.toMatch(/cannot read/);
    const missing = await runBridge(['--config', `${file}.absent`, '--check-config']);
    expect(missing.stderr).toMatch(/cannot read .*\.absent/);
  });

  it('checks the flag form too', async () => {
    expect((await runBridge(['--layout', 'show', '--target', '127.0.0.1:9000', '--target', '[::1]:9001', '--check-config'])).code).toBe(0);
    expect((await runBridge(['--layout', 'show', '--check-config'])).stderr).toMatch(/at least one --target/);
    expect((await runBridge(['--layout', 'show', '--target', 'nohost', '--check-config'])).stderr).toMatch(/not HOST:PORT/);
    expect((await runBridge(['--layout', 'show', '--target', 'h:1', '--tick-hz', 'fast', '--check-config'])).stderr).toMatch(/--tick-hz must be a whole number/);
    expect((await runBridge(['--layout', 'show', '--target', 'h:1', '--send-cpu', 'first', '--check-config'])).stderr).toMatch(/--send-cpu must be a whole number/);
    expect((await runBridge(['--config', configFile({ redisUrl: 'redis://127.0.0.1:1', prefix: 'x:', layouts: [{ layoutId: 'show', targets: [{ host: 'a', port: 1 }] }] }), '--send-cpu', '1', '--check-config'])).code).toBe(0);
    const file = configFile({ redisUrl: 'redis://127.0.0.1:1', prefix: 'x:', sendCpu: -1, layouts: [{ layoutId: 'show', targets: [{ host: 'a', port: 1 }] }] });
    expect((await runBridge(['--config', file, '--check-config'])).stderr).toMatch(/sendCpu must be at least 0/);
    expect((await runBridge(['--check-config'])).code).toBe(2);
  });
});

describe('the process', () => {
  const g = useGatewayWithToken(() => redis.get().server.url);

  const send = async (value: string) => expect((await postAction(g.t, g.token, { layoutId: g.t.layoutId, lid: 5, type: 'String', value })).status).toBe(200);
  const destinationCount = async (layoutId = g.t.layoutId) => (await getLayout(g.t, layoutId, g.t.apiKey)).body.destinationCount as number;

  it('speaks sd_notify: READY, STATUS, WATCHDOG while healthy, STOPPING on SIGTERM, then exits 0', async () => {
    const fake = await startFakeNotifySocket();
    children.push(fake.child);
    const sink = new UdpSink();
    await sink.start();
    try {
      const file = configFile({ redisUrl: redis.get().server.url, prefix: g.t.config.redisPrefix, bridgeId: 'notify', layouts: [{ layoutId: g.t.layoutId, targets: [{ host: '127.0.0.1', port: sink.port }] }] });
      const { child } = await spawnBridge(['--config', file], { NOTIFY_SOCKET: fake.path, WATCHDOG_USEC: '600000' });
      children.push(child);
      await eventually(() => fake.text().includes('READY=1'));
      expect(fake.text()).toMatch(/READY=1\|STATUS=read \d+, sent \d+/);
      await eventually(() => fake.pings.length >= 3);
      const started = Date.now();
      expect(await stopProcess(child)).toBe(0);
      expect(Date.now() - started).toBeLessThan(10_000);
      await eventually(() => fake.text().includes('STOPPING=1'));
      expect(fake.text().indexOf('STOPPING=1')).toBeGreaterThan(fake.text().lastIndexOf('READY=1'));
    } finally {
      await sink.stop();
    }
  });

  // systemd may stop the unit the moment it is told READY=1; the graceful stop must not depend on how soon.
  it('stops gracefully (STOPPING=1, exit 0) on a SIGTERM sent the moment READY=1 arrives', async () => {
    const fake = await startFakeNotifySocket();
    children.push(fake.child);
    const file = configFile({ redisUrl: redis.get().server.url, prefix: g.t.config.redisPrefix, bridgeId: 'ready-stop', layouts: [{ layoutId: g.t.layoutId, targets: [{ host: '127.0.0.1', port: 9 }] }] });
    const child = spawn(process.execPath, [BRIDGE_BIN, '--config', file], { env: { PATH: process.env.PATH ?? '', NOTIFY_SOCKET: fake.path } });
    children.push(child);
    const exited = new Promise<{ code: number | null; signal: string | null }>((r) => child.once('exit', (code, signal) => r({ code, signal })));
    fake.child.stdout!.on('data', () => {
      if (fake.text().includes('READY=1') && !child.killed) child.kill('SIGTERM');
    });
    expect(await exited, fake.text()).toEqual({ code: 0, signal: null });
    expect(fake.text()).toContain('STOPPING=1');
  });

  it('exits 0 on a SIGTERM while it still waits for Redis at start', async () => {
    const file = configFile({ redisUrl: 'redis://127.0.0.1:1', prefix: 'x:', bridgeId: 'start-stop', layouts: [{ layoutId: 'l', targets: [{ host: '127.0.0.1', port: 9 }] }] });
    const child = spawn(process.execPath, [BRIDGE_BIN, '--config', file], { env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'info' } });
    children.push(child);
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    const exited = new Promise<{ code: number | null; signal: string | null }>((r) => child.once('exit', (code, signal) => r({ code, signal })));
    await eventually(() => /ECONNREFUSED|cannot reach|retry/i.test(out));
    child.kill('SIGTERM');
    expect(await exited, out).toEqual({ code: 0, signal: null });
    expect(out).toContain('"msg":"stopping"');
  });

  it('counts and logs sd_notify messages systemd-notify cannot deliver, and keeps running', async () => {
    const file = configFile({ redisUrl: redis.get().server.url, prefix: g.t.config.redisPrefix, bridgeId: 'no-socket', layouts: [{ layoutId: g.t.layoutId, targets: [{ host: '127.0.0.1', port: 9 }] }] });
    const { child, output } = await spawnBridge(['--config', file], { NOTIFY_SOCKET: '/nonexistent/notify.sock' });
    children.push(child);
    const opsPort = Number(/"opsPort":(\d+)/.exec(output())![1]);
    await eventually(async () => sample(await scrape(opsPort), 'audience_bridge_notify_failures_total') >= 1);
    expect(output()).toMatch(/systemd-notify failed/);
    expect(child.exitCode).toBeNull();
  });

  it('keeps WATCHDOG=1 while its read waits on a silent link within the read timeout (a restart would not help), and /readyz says the reads fail', async () => {
    const fake = await startFakeNotifySocket();
    children.push(fake.child);
    const { pings } = fake;
    const proxy = new TcpProxy(redis.get().server.port);
    await proxy.start();
    try {
      const file = configFile({ redisUrl: `redis://127.0.0.1:${proxy.port}`, prefix: g.t.config.redisPrefix, bridgeId: 'wedge', layouts: [{ layoutId: g.t.layoutId, targets: [{ host: '127.0.0.1', port: 9 }] }] });
      const { child, output } = await spawnBridge(['--config', file], { NOTIFY_SOCKET: fake.path, WATCHDOG_USEC: '600000' }); // pings every 300 ms
      children.push(child);
      const opsPort = Number(/"opsPort":(\d+)/.exec(output())?.[1]);
      await eventually(() => pings.length >= 3);
      proxy.hold(); // the blocking read now hangs until its command timeout (800 ms here), then again on a new connection
      const heldAt = performance.now();
      await eventually(async () => (await fetch(`http://127.0.0.1:${opsPort}/readyz`)).status === 503);
      await new Promise((r) => setTimeout(r, 1500));
      const heldUntil = performance.now();
      const times = [heldAt, ...pings.filter((p) => p > heldAt && p < heldUntil), heldUntil];
      expect(Math.max(...times.slice(1).map((p, i) => p - times[i]!))).toBeLessThan(600); // no gap of WatchdogSec
      proxy.release();
      await eventually(async () => (await fetch(`http://127.0.0.1:${opsPort}/readyz`)).status === 200);
    } finally {
      proxy.release();
      await proxy.stop();
    }
  });

  it('after kill -9 and a restart within maxAgeMs, delivers what was sent meanwhile exactly once', async () => {
    const sink = new UdpSink();
    await sink.start();
    try {
      const file = configFile({ redisUrl: redis.get().server.url, prefix: g.t.config.redisPrefix, bridgeId: 'crashy', layouts: [{ layoutId: g.t.layoutId, maxAgeMs: 10_000, targets: [{ host: '127.0.0.1', port: sink.port }] }] });
      const first = await spawnBridge(['--config', file]);
      children.push(first.child);
      for (let i = 0; i < 20; i++) await send(`before-${i}`);
      await eventually(() => sink.messages.length === 20);
      const stream = `${g.t.config.redisPrefix}layout:{${g.t.layoutId}}:actions`;
      await eventually(async () => ((await redis.get().client.xpending(stream, 'bridge:crashy')) as [number])[0] === 0);
      await stopProcess(first.child, 'SIGKILL');
      for (let i = 0; i < 30; i++) await send(`meanwhile-${i}`);
      const second = await spawnBridge(['--config', file]);
      children.push(second.child);
      await eventually(() => sink.messages.length >= 50);
      await new Promise((r) => setTimeout(r, 300)); // nothing more may arrive
      const got = sink.messages.map((m) => m.args[0]!.value);
      expect(got).toEqual([...Array.from({ length: 20 }, (_, i) => `before-${i}`), ...Array.from({ length: 30 }, (_, i) => `meanwhile-${i}`)]);
    } finally {
      await sink.stop();
    }
  });

  it('registers its displays: destinationCount goes 0 -> 2 -> 0 on start and graceful stop, and back to 0 after a crash', async () => {
    // a layout of its own, so no other test's bridge counts
    await g.t.admin.layouts.import(g.t.teamId, { ...DEMO_LAYOUT, layoutId: 'presence-show' });
    const count = () => destinationCount('presence-show');
    const file = configFile({
      redisUrl: redis.get().server.url,
      prefix: g.t.config.redisPrefix,
      bridgeId: 'presence',
      presenceTtlMs: 1000,
      layouts: [{ layoutId: 'presence-show', targets: [{ host: '127.0.0.1', port: 9 }, { host: '127.0.0.1', port: 10 }] }],
    });
    expect(await count()).toBe(0);
    const a = await spawnBridge(['--config', file]);
    children.push(a.child);
    await eventually(async () => (await count()) === 2);
    expect(await stopProcess(a.child)).toBe(0);
    await eventually(async () => (await count()) === 0); // deregistered at once (+ the gateway's 1 s cache)
    const b = await spawnBridge(['--config', file]);
    children.push(b.child);
    await eventually(async () => (await count()) === 2);
    await stopProcess(b.child, 'SIGKILL');
    const crashed = Date.now();
    await eventually(async () => (await count()) === 0, 10_000);
    expect(Date.now() - crashed).toBeLessThan(10_000);
  });
});
