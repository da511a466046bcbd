#!/usr/bin/env node
// audience-osc-monitor: prints every OSC message that arrives on a UDP port, one line each.
// A stand-in display for the demo and for checking a venue's wiring:
//   audience-osc-monitor --port 9000 [--host 127.0.0.1]
import { createSocket } from 'node:dgram';
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { fromBuffer, timetagToDate, type OscPacketOutput } from 'osc-min';

const TYPE_TAGS: Record<string, string> = { integer: 'i', float: 'f', string: 's', true: 'T', false: 'F', double: 'd', blob: 'b', null: 'N' };

/** One line per message: address, OSC type tags, values, and the bundle time when it is not "immediately". */
export function describePacket(p: OscPacketOutput, tag: [number, number] | null = null): string[] {
  if (p.oscType === 'bundle') return p.elements.flatMap((e) => describePacket(e, p.timetag));
  const args = p.args as { type: string; value?: unknown }[];
  const tags = args.map((a) => TYPE_TAGS[a.type] ?? '?').join('');
  const values = args.map((a) => (a.type === 'string' ? JSON.stringify(a.value) : a.type === 'float' ? Number(a.value).toFixed(3) : a.type === 'true' || a.type === 'false' ? a.type : String(a.value)));
  const when = tag && !(tag[0] === 0 && tag[1] === 1) ? ` @ ${timetagToDate(tag).toISOString()}` : '';
  return [`${p.address} ,${tags} ${values.join(' ')}${when}`];
}

export async function startMonitor(port: number, host: string, print: (line: string) => void): Promise<{ port: number; close: () => void }> {
  const socket = createSocket(host.includes(':') ? 'udp6' : 'udp4');
  socket.on('message', (data, from) => {
    try {
      for (const line of describePacket(fromBuffer(data))) print(`[osc ${from.address}:${from.port}] ${line}`);
    } catch {
      print(`[osc ${from.address}:${from.port}] (not OSC: ${data.length} bytes)`);
    }
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(port, host, () => resolve());
  });
  return { port: socket.address().port, close: () => socket.close() };
}

// Run as a command: argv[1] may be a link to this file (/usr/bin/audience-osc-monitor, node_modules/.bin).
if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  const { values } = parseArgs({ options: { port: { type: 'string', default: '9000' }, host: { type: 'string', default: '127.0.0.1' } } });
  const m = await startMonitor(Number(values.port), values.host, (line) => process.stdout.write(`${line}\n`));
  process.stderr.write(`audience-osc-monitor: listening on ${values.host}:${m.port}\n`);
}
