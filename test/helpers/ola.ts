// A lighting desk for a test: the Open Lighting Architecture's olad (Debian `ola`) on a host of
// its own (helpers/hosts.ts), sending sACN (E1.31) multicast out of its interface, as a desk on
// the venue network does. olad refuses root: it runs as the package's olad user, with a config
// directory of its own in which every plugin but E1.31 is off. Frames go in through OLA's own
// ola_streaming_client, one line of comma-separated channel values each. It registers nothing with
// DNS-SD: without a system D-Bus (none runs here) olad's Avahi client retried its connection about
// 1,600 times a second, which took more than half a core from the renderers and the bridge.
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
  const r = spawnSync('ip', ['netns', 'exec', host.ns, ...args], { encoding: 'utf8', timeout: 5000 });
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
  const olad = hosts.run(host, 'runuser', ['-u', 'olad', '--', 'olad', '-c', dir, '-l', '2', '--no-register-with-dns-sd']);
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

/** The OLA universe a rig's Art-Net port-address is read from (one whose low nibble is the address's universe). */
export const artnetOlaUniverse = (portAddress: number) => 60_000 + (portAddress & 0xf);

export interface Rig {
  /** the OLA universe's channels now (1 to 512 as indexes 0 to 511), as olad's HTTP API reads them */
  dmx(olaUniverse: number): Promise<number[]>;
  output(): string;
}

/**
 * A receiver on the rig: olad on `host` with E1.31 input ports patched to the given sACN universes
 * and Art-Net input ports to the given port-addresses (each OLA universe numbered as its sACN
 * universe, and artnetOlaUniverse() for Art-Net), read back over olad's HTTP API on port 9090.
 */
export async function startRig(hosts: Hosts, host: Host, o: { sacn: readonly number[]; artnet: readonly number[] }): Promise<Rig> {
  const dir = mkdtempSync(join(tmpdir(), 'ac-rig-'));
  const uid = Number(spawnSync('id', ['-u', 'olad'], { encoding: 'utf8' }).stdout.trim());
  const gid = Number(spawnSync('id', ['-g', 'olad'], { encoding: 'utf8' }).stdout.trim());
  const others = OTHER_PLUGINS.filter((p) => p !== 'artnet');
  for (const plugin of others) writeFileSync(join(dir, `ola-${plugin}.conf`), 'enabled = false\n');
  writeFileSync(join(dir, 'ola-e131.conf'), `enabled = true\nip = ${host.ip}\ninput_ports = ${Math.max(1, o.sacn.length)}\noutput_ports = 0\nignore_preview = true\n`);
  const net = o.artnet[0] === undefined ? 0 : o.artnet[0] >> 8;
  const subnet = o.artnet[0] === undefined ? 0 : (o.artnet[0] >> 4) & 0xf;
  writeFileSync(join(dir, 'ola-artnet.conf'), `enabled = true\nip = ${host.ip}\nnet = ${net}\nsubnet = ${subnet}\noutput_ports = 0\nuse_loopback = false\n`);
  for (const f of ['', ...others.map((p) => `ola-${p}.conf`), 'ola-e131.conf', 'ola-artnet.conf']) chownSync(join(dir, f), uid, gid);
  let out = '';
  // level 2: the synchronous ola_* calls below leave olad's output unread meanwhile, and a full pipe would stop it
  const olad = hosts.run(host, 'runuser', ['-u', 'olad', '--', 'olad', '-c', dir, '-l', '2', '--no-register-with-dns-sd']);
  olad.stdout?.on('data', (d: Buffer) => (out += String(d)));
  olad.stderr?.on('data', (d: Buffer) => (out += String(d)));
  const devices = async (): Promise<{ e131: string; artnet: string }> => {
    for (let i = 0; i < 100; i++) {
      const info = inHost(host, 'ola_dev_info');
      const e131 = /Device (\d+): E1\.31/.exec(info)?.[1];
      const artnet = /Device (\d+): ArtNet/.exec(info)?.[1];
      if (e131 && (artnet || o.artnet.length === 0)) return { e131, artnet: artnet ?? '' };
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`olad did not offer its E1.31 and Art-Net devices within 10 s: ${out.slice(-2000)}`);
  };
  const d = await devices();
  const patch = (device: string, port: number, universe: number) => {
    const r = spawnSync('ip', ['netns', 'exec', host.ns, 'ola_patch', '-d', device, '-p', String(port), '-i', '-u', String(universe)], { encoding: 'utf8', timeout: 5000 });
    if (r.status !== 0) throw new Error(`ola_patch: ${r.stderr}`);
  };
  o.sacn.forEach((u, i) => patch(d.e131, i, u));
  // an Art-Net input port takes the low nibble of its OLA universe as its universe within the device's net and subnet
  if (o.artnet.length > 0) {
    const r = spawnSync('ip', ['netns', 'exec', host.ns, 'ola_artnet', '-d', d.artnet, '--net', String(net), '-s', String(subnet)], { encoding: 'utf8', timeout: 5000 });
    if (r.status !== 0) throw new Error(`ola_artnet: ${r.stderr}`);
  }
  o.artnet.forEach((a, i) => patch(d.artnet, i, artnetOlaUniverse(a)));
  return {
    async dmx(olaUniverse) {
      const r = await fetch(`http://${host.ip}:9090/get_dmx?u=${olaUniverse}`);
      return ((await r.json()) as { dmx: number[] }).dmx;
    },
    output: () => out,
  };
}
