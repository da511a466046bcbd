// liblo's oscdump (an independent OSC decoder) listening on a free port, as a display would: every
// line it prints, parsed, with when it came (Date.now), and the last one for an address.
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '../../gateway/dev/redis-server.js';

export interface OscLine {
  at: number;
  address: string;
  tags: string;
  values: number[];
}

export interface Oscdump {
  child: ChildProcess;
  port: number;
  lines: OscLine[];
  /** the last line printed for an address: its type tags and values */
  last(address: string): { tags: string; values: number[] } | null;
  /** whether any line mentions this text (an address or part of one) */
  saw(text: string): boolean;
}

export async function startOscdump(): Promise<Oscdump> {
  const port = await freePort();
  const child = spawn('oscdump', ['-L', String(port)]);
  const lines: OscLine[] = [];
  let rest = '';
  child.stdout.on('data', (chunk: Buffer) => {
    const at = Date.now();
    const parts = (rest + String(chunk)).split('\n');
    rest = parts.pop()!;
    for (const line of parts) {
      const [address = '', tags = '', ...values] = line.replace(/^[0-9a-f]{8}\.[0-9a-f]{8} /, '').trim().split(' ');
      lines.push({ at, address, tags, values: values.map(Number) });
    }
  });
  return {
    child,
    port,
    lines,
    last(address) {
      for (let i = lines.length - 1; i >= 0; i--) if (lines[i]!.address === address) return { tags: lines[i]!.tags, values: lines[i]!.values };
      return null;
    },
    saw: (text) => lines.some((l) => l.address.includes(text)),
  };
}
