// The venue host's artifact: `npm run package` builds a Debian package of the bridge. Built here
// from the tested dist/, read with dpkg-deb, installed for real with apt, run from its installed
// paths against a real Redis and its own OSC monitor, removed (the config stays) and purged.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, lstatSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../dev/redis-server.js';
import { ACTION_FIELD, encodeActionEntry } from '../../schemas/action-entry.js';
import { actionStreamKey } from '../../schemas/redis-keys.js';
import { spawnBridge, stopProcess } from '../helpers/bridge.js';
import { eventually } from '../helpers/gateway.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PKG = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string; devDependencies: Record<string, string> };
const CONFIG = '/etc/audience-control/bridge.json';
const UNIT = '/lib/systemd/system/audience-bridge.service';

function sh(cmd: string, args: string[], cwd = ROOT): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd, env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }),
    );
  });
}

/** dpkg's word for the package's state ('installed', 'config-files'), or '' when dpkg does not know it. */
const installed = async () => {
  const r = await sh('dpkg-query', ['-W', '-f=${db:Status-Status}', 'audience-bridge']);
  return r.code === 0 ? r.out.trim() : '';
};

/** True when the path exists, a dangling link included. */
function lstatExists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

const redis = useRedis();
const children: ChildProcess[] = [];
let out = '';
let deb = '';

beforeAll(async () => {
  // never touch a venue host's own installation
  expect(await installed(), 'audience-bridge is already installed on this machine; the package test installs and purges it').not.toBe('installed');
  // where npm run package writes: packages/, which no build empties (dist/ is emptied by every build)
  out = join(ROOT, 'packages');
  deb = join(out, `audience-bridge_${PKG.version}_amd64.deb`);
  rmSync(deb, { force: true });
  const built = await sh('node', ['scripts/package-deb.mjs']);
  expect(built.code, built.out).toBe(0);
}, 180_000);

afterAll(async () => {
  for (const c of children) await stopProcess(c, 'SIGKILL');
  if ((await installed()) !== '') await sh('dpkg', ['--purge', 'audience-bridge']);
  if (deb) rmSync(deb, { force: true });
}, 60_000);

describe('npm run package: the bridge as a Debian package', () => {
  it('is named audience-bridge_VERSION_amd64.deb, and dpkg-deb --info declares Node, systemd and the config as a conffile', async () => {
    expect(readdirSync(out)).toContain(`audience-bridge_${PKG.version}_amd64.deb`);
    expect(readdirSync(out)).not.toContain('stage'); // no staging left behind
    const info = await sh('dpkg-deb', ['--info', deb]);
    expect(info.code).toBe(0);
    expect(info.out).toMatch(/^ Package: audience-bridge$/m);
    expect(info.out).toContain(` Version: ${PKG.version}\n`);
    expect(info.out).toMatch(/^ Architecture: amd64$/m);
    expect(info.out).toMatch(/^ Depends: nodejs \(>= 20\), nodejs \(<< 25\), systemd$/m);
    // which Node it runs on, in words an operator reads with apt show
    expect(info.out).toMatch(/Runs on Node\.js 22 or 24 LTS \(Node\.js 20 still runs it, but reached its end of\n +life on 2026-04-30\)/);
    expect((await sh('dpkg-deb', ['--field', deb, 'Installed-Size'])).out.trim()).toMatch(/^\d+$/);
    expect((await sh('dpkg-deb', ['--ctrl-tarfile', deb])).code).toBe(0);
    const conffiles = await sh('bash', ['-c', `dpkg-deb --ctrl-tarfile '${deb}' | tar -xO ./conffiles`]);
    expect(conffiles.out).toBe(`${CONFIG}\n`);
  });

  it('dpkg-deb --contents: the built bridge, its commands, unit, example config, monitor, and production dependencies only', async () => {
    const contents = (await sh('dpkg-deb', ['--contents', deb])).out;
    const paths = contents.split('\n').map((l) => l.split(/\s+/).slice(5).join(' '));
    expect(paths).toContain('./usr/bin/audience-bridge -> ../lib/audience-bridge/dist/bridge/main.js');
    expect(paths).toContain('./usr/bin/audience-osc-monitor -> ../lib/audience-bridge/dist/bridge/monitor.js');
    for (const p of [`.${UNIT}`, `.${CONFIG}`, './usr/lib/audience-bridge/dist/bridge/main.js', './usr/lib/audience-bridge/dist/runtime/redis.js', './usr/lib/audience-bridge/dist/schemas/bridge-config.schema.json', './usr/share/doc/audience-bridge/README.md', './usr/share/doc/audience-bridge/venue.md']) {
      expect(paths, p).toContain(p);
    }
    for (const dep of ['ioredis', 'osc-min', 'ajv', 'pino', 'prom-client', 'commander']) expect(paths, dep).toContain(`./usr/lib/audience-bridge/node_modules/${dep}/`);
    // nothing of the development tools, nor the gateway's own parts
    for (const dev of [...Object.keys(PKG.devDependencies), 'uWebSockets.js', 'jose']) expect(paths.some((p) => p.includes(`/node_modules/${dev}/`)), dev).toBe(false);
    const dist = paths.filter((p) => p.startsWith('./usr/lib/audience-bridge/dist/'));
    expect(dist.filter((p) => p.includes('/dist/gateway/') || p.endsWith('.ts') || p.endsWith('.map'))).toEqual([]);
    expect(contents).toMatch(/^-rwxr-xr-x root\/root .* \.\/usr\/lib\/audience-bridge\/dist\/bridge\/main\.js$/m);
    // the config holds the Redis password: root's alone
    expect(contents).toMatch(/^-rw------- root\/root .* \.\/etc\/audience-control\/bridge\.json$/m);
  });

  it('apt installs it on this machine; audience-bridge --check-config runs from the PATH; the installed unit passes systemd-analyze verify', async () => {
    const apt = await sh('apt-get', ['install', '-y', '--no-install-recommends', deb]);
    expect(apt.code, apt.out).toBe(0);
    expect(await installed()).toBe('installed');
    expect((await sh('bash', ['-c', 'command -v audience-bridge audience-osc-monitor'])).out).toBe('/usr/bin/audience-bridge\n/usr/bin/audience-osc-monitor\n');
    const check = await sh('audience-bridge', ['--config', CONFIG, '--check-config'], '/');
    expect(check.out).toContain('configuration OK (1 layout(s), bridge id venue-a)');
    expect(check.code).toBe(0);
    // installed readable by root only, and handed to the service's dynamic user as a systemd credential
    const mode = statSync(CONFIG);
    expect([(mode.mode & 0o777).toString(8), mode.uid, mode.gid]).toEqual(['600', 0, 0]);
    const unit = readFileSync(UNIT, 'utf8');
    expect(unit).toContain(`\nLoadCredential=bridge.json:${CONFIG}\n`);
    expect(unit).toMatch(/^ExecStart=\/usr\/bin\/audience-bridge --config %d\/bridge\.json$/m);
    expect(unit).toMatch(/^ExecStartPre=\/usr\/bin\/audience-bridge --config %d\/bridge\.json --check-config$/m);
    expect(unit).not.toContain('/opt/audience-control');
    const verify = await sh('systemd-analyze', ['verify', UNIT]);
    expect(verify.out.trim()).toBe('');
    expect(verify.code).toBe(0);
  }, 120_000);

  it('the installed bridge sends an action to a display, and the installed audience-osc-monitor prints it', async () => {
    const port = await freePort();
    const monitor = spawn('audience-osc-monitor', ['--port', String(port)], { cwd: '/' });
    children.push(monitor);
    let printed = '';
    monitor.stdout.on('data', (d) => (printed += d));
    monitor.stderr.on('data', (d) => (printed += d));
    await eventually(() => printed.includes(`listening on 127.0.0.1:${port}`), 10_000);

    const prefix = randomPrefix();
    const config = join(mkdtempSync(join(tmpdir(), 'ac-deb-run-')), 'bridge.json');
    writeFileSync(config, JSON.stringify({ bridgeId: 'deb-test', redisUrl: redis.get().server.url, redisPrefix: prefix, opsPort: 0, layouts: [{ layoutId: 'deb-show', targets: [{ host: '127.0.0.1', port }] }] }));
    const bridge = await spawnBridge(['--config', config], {}, 15_000, ['/usr/bin/audience-bridge']);
    children.push(bridge.child);
    const entry = { v: 1 as const, id: crypto.randomUUID(), layoutId: 'deb-show', lid: 2, address: '/002', type: 'Slider' as const, value: 0.25, ts: Date.now() };
    await redis.get().client.xadd(actionStreamKey(prefix, 'deb-show'), '*', ACTION_FIELD, encodeActionEntry(entry));
    await eventually(() => printed.includes('/002 ,f 0.250'), 10_000);
    expect(await stopProcess(bridge.child)).toBe(0);
  }, 60_000);

  it('apt remove keeps the edited config; apt purge removes it, and the links systemctl enable made', async () => {
    const wants = '/etc/systemd/system/multi-user.target.wants/audience-bridge.service';
    const enabled = await sh('systemctl', ['enable', 'audience-bridge']);
    expect(enabled.code, enabled.out).toBe(0);
    expect(existsSync(wants) || lstatExists(wants)).toBe(true);
    const edited = readFileSync(CONFIG, 'utf8').replace('venue-a', 'venue-edited');
    writeFileSync(CONFIG, edited);
    const remove = await sh('apt-get', ['remove', '-y', 'audience-bridge']);
    expect(remove.code, remove.out).toBe(0);
    expect(existsSync('/usr/bin/audience-bridge')).toBe(false);
    expect(existsSync('/usr/lib/audience-bridge')).toBe(false);
    expect(existsSync(UNIT)).toBe(false);
    expect(readFileSync(CONFIG, 'utf8')).toBe(edited);
    const purge = await sh('apt-get', ['purge', '-y', 'audience-bridge']);
    expect(purge.code, purge.out).toBe(0);
    expect(existsSync(CONFIG)).toBe(false);
    expect(lstatExists(wants)).toBe(false);
    expect(await installed()).toBe('');
  }, 120_000);
});

describe("docs/venue.md's install section", () => {
  it('is the three commands of this package: apt install this version, edit the config, enable the unit', () => {
    const readme = readFileSync(join(ROOT, 'docs/venue.md'), 'utf8');
    const section = readme.slice(readme.indexOf('### Install on a venue host'));
    const block = /```\n([^`]+)```/.exec(section)![1]!.trim().split('\n');
    expect(block).toEqual([`apt install ./audience-bridge_${PKG.version}_amd64.deb`, `$EDITOR ${CONFIG}`, 'systemctl enable --now audience-bridge']);
    // the unit it enables is the one the package installs, and it reads the config edited
    expect(readFileSync(join(ROOT, 'systemd/audience-bridge.service'), 'utf8')).toContain(`LoadCredential=bridge.json:${CONFIG}`);
  });
});
