// A lighting desk for a test: the Open Lighting Architecture's olad (Debian `ola`) on a host of
// its own (helpers/hosts.ts), sending sACN (E1.31) multicast out of its interface, as a desk on
// the venue network does. olad refuses root: it runs as the package's olad user, with a config
// directory of its own in which every plugin but E1.31 is off. Frames go in through OLA's own
// ola_streaming_client, one line of comma-separated channel values each.
import { spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Host, Hosts } from './hosts.js';

const OTHER_PLUGINS = ['artnet', 'dummy', 'espnet', 'ftdidmx', 'gpio', 'karate', 'kinet', 'milinst', 'opendmx', 'openpixelcontrol', 'osc', 'pathport', 'renard', 'sandnet', 'shownet', 'spi', 'stageprofi', 'uartdmx', 'usbdmx', 'usbserial'];

export interface Desk {
  /** sends one frame: the universe's channels from 1 on */
  send(channels: readonly number[]): void;
  /** everything olad and the sender printed */
  output(): string;
}

function inHost(host: Host, ...args: string[]): string {
  const r = spawnSync('ip', ['netns', 'exec', host.ns, ...args], { encoding: 'utf8' });
  return `${r.stdout}${r.stderr}`;
}

/** olad on `host`, its E1.31 output patched to `universe`, and a streaming sender into it. */
export async function startDesk(hosts: Hosts, host: Host, universe: number, priority?: number): Promise<Desk> {
  const dir = mkdtempSync(join(tmpdir(), 'ac-ola-'));
  const uid = Number(spawnSync('id', ['-u', 'olad'], { encoding: 'utf8' }).stdout.trim());
  const gid = Number(spawnSync('id', ['-g', 'olad'], { encoding: 'utf8' }).stdout.trim());
  for (const plugin of OTHER_PLUGINS) writeFileSync(join(dir, `ola-${plugin}.conf`), 'enabled = false\n');
  writeFileSync(join(dir, 'ola-e131.conf'), `enabled = true\nip = ${host.ip}\ninput_ports = 1\noutput_ports = 1\nignore_preview = true\n`);
  for (const f of ['', ...OTHER_PLUGINS.map((p) => `ola-${p}.conf`), 'ola-e131.conf']) chownSync(join(dir, f), uid, gid);
  let out = '';
  const olad = hosts.run(host, 'runuser', ['-u', 'olad', '--', 'olad', '-c', dir, '-l', '2']);
  olad.stdout?.on('data', (d: Buffer) => (out += String(d)));
  olad.stderr?.on('data', (d: Buffer) => (out += String(d)));
  let device = '';
  for (let i = 0; i < 100 && !device; i++) {
    await new Promise((r) => setTimeout(r, 100));
    device = /Device (\d+): E1\.31/.exec(inHost(host, 'ola_dev_info'))?.[1] ?? '';
  }
  if (!device) throw new Error(`olad did not offer its E1.31 device within 10 s: ${out.slice(-2000)}`);
  const patched = spawnSync('ip', ['netns', 'exec', host.ns, 'ola_patch', '-d', device, '-p', '0', '-u', String(universe)], { encoding: 'utf8' });
  if (patched.status !== 0) throw new Error(`ola_patch: ${patched.stderr}`);
  const sender: ChildProcess = hosts.run(host, 'ola_streaming_client', ['-u', String(universe), ...(priority === undefined ? [] : ['--priority', String(priority)])]);
  sender.stdout?.on('data', (d: Buffer) => (out += String(d)));
  sender.stderr?.on('data', (d: Buffer) => (out += String(d)));
  return {
    send: (channels) => sender.stdin!.write(`${channels.join(',')}\n`),
    output: () => out,
  };
}
