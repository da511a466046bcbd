// liblo's oscdump (an independent OSC decoder) listening on a free port, as a display would: every
// line it prints, parsed, with when it came (Date.now), and the last one for an address.
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '../../dev/redis-server.js';

export interface OscLine {
  at: number;
  /** the line as oscdump printed it */
  raw: string;
  /** the bundle's timetag as Unix ms (null: none, or "immediately") */
  timetag: number | null;
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

/**
 * oscdump on a free port (or `port`), over UDP, or over TCP (liblo takes length-prefixed and
 * SLIP-framed packets alike); `via` runs it through another command (`ip netns exec NS`: on a test's host).
 */
export async function startOscdump(o: { tcp?: boolean; port?: number; via?: readonly string[] } = {}): Promise<Oscdump> {
  const port = o.port ?? (await freePort());
  const [program, ...args] = [...(o.via ?? []), 'oscdump', '-L', o.tcp ? `osc.tcp://:${port}` : String(port)];
  const child = spawn(program, args);
  const lines: OscLine[] = [];
  let rest = '';
  child.stdout.on('data', (chunk: Buffer) => {
    const at = Date.now();
    const parts = (rest + String(chunk)).split('\n');
    rest = parts.pop()!;
    for (const line of parts) {
      const tt = /^([0-9a-f]{8})\.([0-9a-f]{8}) /.exec(line);
      const [address = '', tags = '', ...values] = line.replace(/^[0-9a-f]{8}\.[0-9a-f]{8} /, '').trim().split(' ');
      lines.push({ at, raw: line, timetag: tt ? ntpToUnixMs(parseInt(tt[1]!, 16), parseInt(tt[2]!, 16)) : null, address, tags, values: values.map(Number) });
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

/** An OSC timetag (seconds since 1900 and a 2^-32 fraction) as Unix ms; null for "immediately" (0.1). */
function ntpToUnixMs(seconds: number, fraction: number): number | null {
  if (seconds === 0 && fraction <= 1) return null;
  return (seconds - 2_208_988_800) * 1000 + (fraction / 2 ** 32) * 1000;
}
