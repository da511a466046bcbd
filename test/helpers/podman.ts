// podman as the container test runs it: with test/fixtures/podman-containers.conf (runc, and
// limits the host allows), asynchronously so that the test's sockets keep being served while a
// container starts or stops, and images made of the machine's own binaries where no registry is
// reachable.
import { execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CONF = fileURLToPath(new URL('../fixtures/podman-containers.conf', import.meta.url));
const ENV = { ...process.env, CONTAINERS_CONF: CONF };

/** podman's stdout; rejects with its stderr when it exits non-zero. */
export function podman(args: string[], timeoutMs = 120_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('podman', args, { env: ENV, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error) reject(new Error(`podman ${args.join(' ')}: ${error.message}\n${stderr.slice(-4000)}`));
      else resolve(stdout);
    });
  });
}

/** A command's stdout (a script of the repository, say), with podman's settings in its environment; rejects with the ends of its stdout and stderr. */
export function run(command: string, args: string[], env: Record<string, string> = {}, timeoutMs = 600_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { env: { ...ENV, ...env }, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${command} ${args.join(' ')}: ${error.message}\n${stdout.slice(-4000)}\n${stderr.slice(-4000)}`));
      else resolve(stdout);
    });
  });
}

/**
 * An image holding these host programs (absolute paths) in /usr/bin and the shared libraries ldd
 * lists for them, for peers such as redis-server and oscdump.
 */
export async function imageOfHostPrograms(image: string, programs: string[]): Promise<void> {
  const script = `set -euo pipefail
root=$(mktemp -d); trap 'rm -rf "$root"' EXIT
mkdir -p "$root/usr/bin" "$root/tmp" "$root/etc"; chmod 1777 "$root/tmp"; ln -s usr/bin "$root/bin"
for p in "$@"; do
  cp "$(readlink -f "$p")" "$root/usr/bin/$(basename "$p")"
  ldd "$p" | grep -oE '/[^ ]+' | while read -r lib; do mkdir -p "$root$(dirname "$lib")"; cp -L "$lib" "$root$lib"; done
done
printf 'root:x:0:0:root:/:/bin/sh\\n' >"$root/etc/passwd"
tar -C "$root" -c . | podman import --change 'ENV PATH=/usr/bin' - "${image}" >/dev/null`;
  await new Promise<void>((resolve, reject) => {
    const child = spawn('bash', ['-c', script, 'image', ...programs], { env: ENV, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err += String(c)));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`making ${image} failed (${code}): ${err.slice(-2000)}`))));
  });
}
