// `npm start` as a newcomer meets it: embedded Redis, demo seed, and a walk-through whose commands,
// pasted into a shell, work. A second start keeps the data (AOF) and replaces the demo key.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createSocket } from 'node:dgram';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, waitForRedis } from '../../dev/redis-server.js';
import { connectLive } from '../helpers/live.js';
import { eventually } from '../helpers/gateway.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const START = join(ROOT, 'dist/demo/start.js');
const running: ChildProcess[] = [];
/** npm start runs in a process group of its own, so a failed test ends it with its embedded Redis and bridge. */
function killGroup(c: ChildProcess): void {
  try {
    process.kill(-c.pid!, 'SIGKILL');
  } catch {
    /* already gone */
  }
}
afterEach(() => {
  for (const c of running.splice(0)) killGroup(c);
});

/** `npm start`'s program on the embedded default (no REDIS_URL), in a process group of its own; its output so far in `out()`. */
function spawnStart(env: Record<string, string>): { child: ChildProcess; out: () => string } {
  const { REDIS_URL: _, SIGNING_KEK_FILE: __, ...inherited } = process.env; // the demo makes its own key-encryption key
  const child = spawn(process.execPath, [START], { cwd: ROOT, env: { ...inherited, LOG_LEVEL: 'warn', ...env }, detached: true });
  running.push(child);
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  return { child, out: () => out };
}

/** Resolves once it says "Stop with Ctrl-C". */
async function start(env: Record<string, string>): Promise<{ child: ChildProcess; out: () => string }> {
  const started = spawnStart(env);
  await eventually(() => started.out().includes('Stop with Ctrl-C'), 20_000);
  return started;
}

// stdin is /dev/null, as for a command pasted into a terminal: bash sources /etc/bash.bashrc (which
// fails under -u on PS1) when its stdin is a socket and SHLVL is below 2, and Node's piped stdin is one.
// It runs in a folder of its own: the walk-through's commands must work from wherever they are pasted.
function bash(script: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-euo', 'pipefail', '-c', script], { cwd: mkdtempSync(join(tmpdir(), 'ac-shell-')), timeout: 20_000, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

/** Free ports and a fresh data directory for one `npm start`. */
async function demoEnv(): Promise<Record<'AUDIENCE_VAR_DIR' | 'EMBEDDED_REDIS_PORT' | 'PORT' | 'DEMO_OSC_PORT' | 'OPS_PORT' | 'DEMO_BRIDGE_OPS_PORT', string>> {
  return {
    AUDIENCE_VAR_DIR: mkdtempSync(join(tmpdir(), 'ac-demo-')),
    EMBEDDED_REDIS_PORT: String(await freePort()),
    PORT: String(await freePort()),
    DEMO_OSC_PORT: String(await freePort()),
    OPS_PORT: '0',
    DEMO_BRIDGE_OPS_PORT: '0',
  };
}

async function stop(child: ChildProcess): Promise<number | null> {
  const exited = new Promise<number | null>((r) => child.once('exit', r));
  child.kill('SIGTERM');
  return exited;
}

describe('npm start', () => {
  it('seeds a demo, prints a walk-through that works as pasted, and keeps its data across restarts', async () => {
    const env = await demoEnv();
    const first = await start(env);
    const text = first.out();
    expect(text).toContain(`API      http://127.0.0.1:${env.PORT}`);
    expect(text).toMatch(/embedded, AOF in .*redis/);
    expect(text).toMatch(/API key +\S+\n +\(created: kept in var\/demo.json/);
    // its own key-encryption key for the signing secrets, the owner's alone
    expect(statSync(join(env.AUDIENCE_VAR_DIR, 'signing-kek')).mode & 0o777).toBe(0o600);
    const walk = text.slice(text.indexOf('  export API='), text.indexOf('  # 6.'));
    const r = await bash(walk);
    expect(r.stderr).toBe('');
    const lines = r.stdout.trim().split('\n');
    const discovery = JSON.parse(lines[0]!) as { controls: { type: string; aggregate?: { mode: string; cue?: object } }[]; activePageId: string; destinationCount: number; zones: string[] };
    expect(discovery.activePageId).toBe('main');
    expect(discovery.destinationCount).toBe(1); // the demo bridge's OSC monitor
    expect(discovery.controls.map((c) => c.type)).toEqual(['Button', 'Slider', 'Toggle', 'Index', 'String', 'XYPad', 'Slider', 'Index', 'Toggle']);
    // the demo shows the crowd: an aggregated Slider, a vote with a cue, a Toggle with a threshold cue, zones
    expect(discovery.controls.filter((c) => c.aggregate).map((c) => [c.aggregate!.mode, c.aggregate!.cue !== undefined])).toEqual([['mean', false], ['votes', true], ['fraction', true]]);
    expect(discovery.zones).toEqual(['left', 'right']);
    expect(lines.slice(1, 6)).toEqual(Array(5).fill('{"success":true}')); // two actions, three votes
    expect(lines[6]).toMatch(/page encore is active/);
    expect(JSON.parse(lines[7]!).activePageId).toBe('encore');
    // each curl visibly became an OSC packet at the monitor, and the vote reached its cue on the real bridge
    await eventually(() => first.out().includes('/006 ,ff 0.200 0.900'));
    expect(first.out()).toContain(`[osc 127.0.0.1:`);
    expect(first.out()).toContain('/002 ,f 0.750');
    await eventually(() => first.out().includes('/011/cue ,i 2'));
    // the printed administrator can sign in to the management page
    const admin = /Admin +(\S+)\/admin\/ +sign in as (\S+) with (\S+)/.exec(text)!;
    expect(admin[1]).toBe(`http://127.0.0.1:${env.PORT}`);
    const signin = await fetch(`${admin[1]}/admin/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: admin[2], password: admin[3] }) });
    expect(signin.status).toBe(200);
    // the printed audience page link: the page, and a token that opens the live channel
    const play = /Phone +(\S+)\/play\/#token=(\S+)/.exec(text)!;
    expect(play[1]).toBe(`http://127.0.0.1:${env.PORT}`);
    expect((await fetch(`${play[1]}/play/`)).status).toBe(200);
    const live = await connectLive(play[1]!, play[2]!);
    expect(live.frames[0]).toMatchObject({ op: 'page', layoutId: 'demo-show' });
    live.ws.close();
    const firstKey = /export API=\S+ KEY=(\S+)/.exec(text)![1]!;
    expect(await stop(first.child)).toBe(0);

    // a second start on the same Redis keeps the team, the layout and the key: tokens handed out keep working
    const second = await start(env);
    const secondKey = /export API=\S+ KEY=(\S+)/.exec(second.out())![1]!;
    expect(secondKey).toBe(firstKey);
    expect(second.out()).toMatch(/API key +\S+\n +\(reused: the previous start's key/);
    const api = `http://127.0.0.1:${env.PORT}`;
    const now = await fetch(`${api}/layout/demo-show`, { headers: { 'x-api-key': secondKey } });
    expect(((await now.json()) as { activePageId: string }).activePageId).toBe('encore'); // kept by AOF
    const again = await connectLive(play[1]!, play[2]!); // the first start's phone link
    expect(again.frames[0]).toMatchObject({ op: 'page', layoutId: 'demo-show', activePageId: 'encore' });
    again.ws.close();
    const stream = await bash(`redis-cli -p ${env.EMBEDDED_REDIS_PORT} XLEN 'ac:layout:{demo-show}:actions'`);
    expect(Number(stream.stdout.trim())).toBeGreaterThanOrEqual(3); // two actions and the votes' summaries
    expect(await stop(second.child)).toBe(0);
    expect(second.out()).toMatch(/Stopped the gateway \(http:\/\/127\.0\.0\.1:\d+\), the embedded Redis \(.*\), the OSC monitor \(.*\), the demo bridge\./);
  });

  it('leaves no process behind when a test fails half-way: killing its group ends the embedded Redis and the bridge', async () => {
    const env = await demoEnv();
    const { child } = await start(env);
    const group = () => execFileSync('ps', ['-o', 'pid=,comm=', '-g', String(child.pid)], { encoding: 'utf8' }).trim();
    expect(group()).toMatch(/redis-server/);
    killGroup(child); // what afterEach does when a test fails
    await eventually(() => {
      try {
        return group() === '';
      } catch {
        return true; // ps exits 1 when the group is empty
      }
    });
    await expect(waitForRedis(Number(env.EMBEDDED_REDIS_PORT), 300)).rejects.toThrow();
  });

  it('names every taken port and the variable that moves it in one message, before starting anything', async () => {
    // ports the kernel picks as this test takes them: one drawn free and then bound could be taken
    // in between by a test running beside this one, and the bind would fail
    const servers = await Promise.all(
      [0, 1, 2, 3].map(() => {
        const server = createServer();
        return new Promise<Server>((resolve, reject) => {
          server.once('error', reject);
          server.listen(0, '127.0.0.1', () => resolve(server));
        });
      }),
    );
    const osc = createSocket('udp4');
    await new Promise<void>((resolve, reject) => {
      osc.once('error', reject);
      osc.bind(0, '127.0.0.1', resolve);
    });
    const [port, ops, bridgeOps, redisPort] = servers.map((s) => String((s.address() as AddressInfo).port));
    const env = { ...(await demoEnv()), PORT: port!, OPS_PORT: ops!, DEMO_BRIDGE_OPS_PORT: bridgeOps!, EMBEDDED_REDIS_PORT: redisPort!, DEMO_OSC_PORT: String(osc.address().port) };
    try {
      const { child, out } = spawnStart(env);
      const code = await new Promise<number | null>((r) => child.once('exit', r));
      expect(code).toBe(1);
      const said = out();
      for (const variable of ['PORT', 'OPS_PORT', 'DEMO_OSC_PORT', 'DEMO_BRIDGE_OPS_PORT', 'EMBEDDED_REDIS_PORT']) expect(said).toContain(`${variable}=${env[variable as keyof typeof env]} (`);
      expect(said.match(/npm start:/g)).toHaveLength(1);
      expect(said).not.toMatch(/redis-server|listening/);
    } finally {
      for (const s of servers) s.close();
      osc.close();
    }
  });

  it('never takes another demo’s Redis for its own: a second start on the same EMBEDDED_REDIS_PORT refuses, and the first demo is untouched', async () => {
    const env = await demoEnv();
    const first = await start(env);
    const key = /export API=\S+ KEY=(\S+)/.exec(first.out())![1]!;
    const second = spawnStart({ ...(await demoEnv()), EMBEDDED_REDIS_PORT: env.EMBEDDED_REDIS_PORT });
    expect(await new Promise<number | null>((r) => second.child.once('exit', r))).toBe(1);
    expect(second.out()).toContain(`EMBEDDED_REDIS_PORT=${env.EMBEDDED_REDIS_PORT} (`);
    const layout = await fetch(`http://127.0.0.1:${env.PORT}/layout/demo-show`, { headers: { 'x-api-key': key } });
    expect(layout.status).toBe(200); // the first demo's key was not replaced
    expect(await stop(first.child)).toBe(0);
  });

  it('stops quietly on Ctrl-C (SIGINT to the whole process group, the embedded Redis included)', async () => {
    const { child, out } = await start(await demoEnv());
    const exited = new Promise<{ code: number | null; signal: string | null }>((r) => child.once('exit', (code, signal) => r({ code, signal })));
    process.kill(-child.pid!, 'SIGINT');
    const { code, signal } = await exited;
    expect({ code, signal }, `npm start's output:\n${out()}`).toEqual({ code: 0, signal: null });
    expect(out()).not.toMatch(/connection lost|WARN|"level":[456]0/);
  });

  // The handlers must be in place before the walk-through says "Stop with Ctrl-C", and a Ctrl-C
  // during the start (here: once the embedded Redis answers) stops it as quietly as one after.
  it('stops on Ctrl-C during its start too, with exit code 0 and nothing left running', async () => {
    const env = await demoEnv();
    const { child, out } = spawnStart(env);
    const exited = new Promise<{ code: number | null; signal: string | null }>((r) => child.once('exit', (code, signal) => r({ code, signal })));
    await waitForRedis(Number(env.EMBEDDED_REDIS_PORT), 20_000);
    process.kill(-child.pid!, 'SIGINT');
    expect(await exited, `npm start's output:\n${out()}`).toEqual({ code: 0, signal: null });
    expect(out()).not.toContain('Stop with Ctrl-C');
    expect(out()).not.toContain('npm start:');
    await expect(waitForRedis(Number(env.EMBEDDED_REDIS_PORT), 300)).rejects.toThrow();
  });
});

