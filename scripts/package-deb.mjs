// npm run package: the venue host's one artifact, a Debian package of the bridge built with
// dpkg-deb from the already-built dist/ (npm run package builds first):
//   /usr/lib/audience-bridge/      dist/{bridge,runtime,schemas} + the bridge's production dependencies only
//   /usr/bin/audience-bridge       and /usr/bin/audience-osc-monitor (links into it)
//   /lib/systemd/system/audience-bridge.service   systemd/audience-bridge.service with the installed paths
//   /etc/audience-control/bridge.json             an example config (a conffile: removing keeps it), 0600
//                                                  root: it holds the Redis password; the unit loads it as a credential
//   /usr/share/doc/audience-bridge/venue.md       the venue technician's page (docs/venue.md), and README.md
// The production dependencies are the bare imports of bridge/, runtime/ and schemas/, at the
// versions package-lock.json pins. Usage: node scripts/package-deb.mjs [--out DIR] (default: packages/,
// which no build empties)
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const outFlag = process.argv.indexOf('--out');
const OUT = outFlag > 0 ? process.argv[outFlag + 1] : join(ROOT, 'packages');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const NAME = 'audience-bridge';
const ARCH = 'amd64';
const deb = join(OUT, `${NAME}_${pkg.version}_${ARCH}.deb`);
const stage = join(OUT, 'stage', NAME);
const lib = join(stage, 'usr/lib', NAME);

const run = (cmd, args, cwd = ROOT) => execFileSync(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
const write = (path, text, mode = 0o644) => {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  chmodSync(path, mode);
};
const files = (dir) => readdirSync(dir).flatMap((f) => (statSync(join(dir, f)).isDirectory() ? files(join(dir, f)) : [join(dir, f)]));

for (const dir of ['bridge', 'runtime', 'schemas']) {
  try {
    statSync(join(ROOT, 'dist', dir));
  } catch {
    throw new Error(`dist/${dir} is missing: run npm run package (it builds first)`);
  }
}

// 1. The bridge's own code, as built.
rmSync(stage, { recursive: true, force: true });
for (const dir of ['bridge', 'runtime', 'schemas']) cpSync(join(ROOT, 'dist', dir), join(lib, 'dist', dir), { recursive: true });
rmSync(join(lib, 'dist/schemas/openapi.json'), { force: true }); // the gateway's API document
for (const map of files(join(lib, 'dist')).filter((f) => f.endsWith('.map'))) rmSync(map); // they point at sources not shipped
for (const bin of ['bridge/main.js', 'bridge/monitor.js']) chmodSync(join(lib, 'dist', bin), 0o755);

// 2. Its production dependencies: what its sources import, at the locked versions.
const imported = new Set();
for (const dir of ['bridge', 'runtime', 'schemas']) {
  for (const file of files(join(ROOT, dir)).filter((f) => f.endsWith('.ts'))) {
    for (const m of readFileSync(file, 'utf8').matchAll(/^import (?!type ).*? from '([^'.][^']*)'/gm)) {
      const name = m[1].startsWith('@') ? m[1].split('/').slice(0, 2).join('/') : m[1].split('/')[0];
      if (!name.startsWith('node:')) imported.add(name);
    }
  }
}
const dependencies = Object.fromEntries([...imported].sort().map((name) => {
  const range = pkg.dependencies[name];
  if (!range) throw new Error(`the bridge imports ${name}, which is not a production dependency in package.json`);
  return [name, range];
}));
write(join(lib, 'package.json'), `${JSON.stringify({ name: NAME, version: pkg.version, private: true, type: 'module', engines: pkg.engines, dependencies }, null, 2)}\n`);
cpSync(join(ROOT, 'package-lock.json'), join(lib, 'package-lock.json'));
run('npm', ['install', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], lib);

// 3. Commands on the PATH, the unit, the example config, the docs.
mkdirSync(join(stage, 'usr/bin'), { recursive: true });
symlinkSync(`../lib/${NAME}/dist/bridge/main.js`, join(stage, 'usr/bin/audience-bridge'));
symlinkSync(`../lib/${NAME}/dist/bridge/monitor.js`, join(stage, 'usr/bin/audience-osc-monitor'));
const unit = readFileSync(join(ROOT, 'systemd/audience-bridge.service'), 'utf8')
  .replace(/^# Install: .*$/m, '# Installed by the audience-bridge package; the config is /etc/audience-control/bridge.json.')
  // the command's shebang carries the Node flags the unit gives node (bridge/node-flags.ts)
  .replace(/\/usr\/bin\/node (--\S+ )*\/opt\/audience-control\/dist\/bridge\/main\.js/g, '/usr/bin/audience-bridge')
  .replace('file:///opt/audience-control/docs/venue.md', `file:///usr/share/doc/${NAME}/venue.md`);
if (unit.includes('/opt/audience-control')) throw new Error('the unit still names /opt/audience-control');
write(join(stage, 'lib/systemd/system/audience-bridge.service'), unit);
const exampleConfig = {
  bridgeId: 'venue-a',
  redisUrl: 'redis://127.0.0.1:6379',
  layouts: [{ layoutId: 'demo-show', targets: [{ host: '127.0.0.1', port: 9000 }] }],
};
write(join(stage, 'etc/audience-control/bridge.json'), `${JSON.stringify(exampleConfig, null, 2)}\n`, 0o600);
write(join(stage, `usr/share/doc/${NAME}/README.md`), readFileSync(join(ROOT, 'README.md'), 'utf8'));
write(join(stage, `usr/share/doc/${NAME}/venue.md`), readFileSync(join(ROOT, 'docs/venue.md'), 'utf8'));

// 4. Package metadata and maintainer scripts. Scripts honour DPKG_ROOT (an install into another
// root touches nothing of this machine's systemd) and never enable the service: the venue host
// edits the config first, then enables it.
const installedKb = Number(run('du', ['-sk', '--apparent-size', stage]).split('\t')[0]);
write(
  join(stage, 'DEBIAN/control'),
  [
    `Package: ${NAME}`,
    `Version: ${pkg.version}`,
    `Architecture: ${ARCH}`,
    'Maintainer: audience-control <ops@audience-control.invalid>',
    `Installed-Size: ${installedKb}`,
    'Depends: nodejs (>= 20), nodejs (<< 25), systemd',
    'Section: net',
    'Priority: optional',
    'Description: audience-control bridge: Redis action streams to timed OSC/UDP',
    ' Runs on the venue host next to the displays: reads the action streams of its',
    ' layouts from Redis and sends every action as timed OSC over UDP to each display.',
    ' Includes audience-osc-monitor, which prints the OSC a UDP port receives.',
    ' Runs on Node.js 22 or 24 LTS (Node.js 20 still runs it, but reached its end of',
    " life on 2026-04-30); venue.md in /usr/share/doc/audience-bridge lists each",
    " version's end of life.",
    '',
  ].join('\n'),
);
write(join(stage, 'DEBIAN/conffiles'), '/etc/audience-control/bridge.json\n');
// The unit's enablement goes through deb-systemd-helper, as debhelper's generated scripts do: it
// records the links `systemctl enable` makes (update-state), so a purge removes them even when the
// administrator enabled the unit with systemctl, and a re-install keeps an enabled unit enabled.
const UNIT_NAME = 'audience-bridge.service';
const live = 'if [ -z "${DPKG_ROOT:-}" ] && [ -d /run/systemd/system ]; then';
const helper = 'if [ -z "${DPKG_ROOT:-}" ] && [ -x /usr/bin/deb-systemd-helper ]; then';
write(
  join(stage, 'DEBIAN/postinst'),
  `#!/bin/sh\nset -e\nif [ "$1" = configure ] || [ "$1" = abort-upgrade ] || [ "$1" = abort-deconfigure ] || [ "$1" = abort-remove ]; then\n  ${helper}\n    deb-systemd-helper unmask ${UNIT_NAME} >/dev/null || true\n    if deb-systemd-helper --quiet was-enabled ${UNIT_NAME}; then\n      deb-systemd-helper enable ${UNIT_NAME} >/dev/null || true\n    else\n      deb-systemd-helper update-state ${UNIT_NAME} >/dev/null || true\n    fi\n  fi\n  ${live}\n    systemctl daemon-reload || true\n    systemctl try-restart ${UNIT_NAME} || true\n  fi\nfi\n`,
  0o755,
);
write(join(stage, 'DEBIAN/prerm'), `#!/bin/sh\nset -e\nif [ "$1" = remove ]; then\n  ${live}\n    systemctl stop ${UNIT_NAME} || true\n  fi\nfi\n`, 0o755);
write(
  join(stage, 'DEBIAN/postrm'),
  `#!/bin/sh\nset -e\n${live}\n  systemctl daemon-reload || true\nfi\nif [ "$1" = remove ]; then\n  ${helper}\n    deb-systemd-helper mask ${UNIT_NAME} >/dev/null || true\n  fi\nfi\nif [ "$1" = purge ]; then\n  ${helper}\n    deb-systemd-helper purge ${UNIT_NAME} >/dev/null || true\n    deb-systemd-helper unmask ${UNIT_NAME} >/dev/null || true\n  fi\nfi\n`,
  0o755,
);

mkdirSync(OUT, { recursive: true });
run('dpkg-deb', ['--root-owner-group', '-Zxz', '--build', stage, deb]);
rmSync(join(OUT, 'stage'), { recursive: true, force: true });
console.log(`${relative(process.cwd(), deb) || deb}: ${Math.round(statSync(deb).size / 1024)} KiB; install with: apt install ./${relative(process.cwd(), deb)}`);
