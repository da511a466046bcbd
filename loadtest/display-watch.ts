// The venue end of a rehearsal (--display host:port, or --osc-listen): listens where the bridge
// sends OSC, as a display would, keeps the last numbers that arrived at each address (what the
// crowd check sets beside what it expected), and finds the simulated String actions in what arrives. Each String action a phone
// sends carries a tag (" #<phone>.<ref>"), so its datagram is recognised at the display: the
// latency from the action's planned moment to its arrival (display_ms), and the actions that were
// stored (acked) but never arrived (display_lost).
import { createSocket, type Socket } from 'node:dgram';
import { fromBuffer, type OscPacketOutput } from 'osc-min';
import { LoadtestError } from './errors.js';
import type { Metrics } from './metrics.js';

const TAG = / #(p\d+\.\d+)$/;

interface Tagged {
  intendedAt: number;
  acked: boolean;
}

export class DisplayWatch {
  private readonly tagged = new Map<string, Tagged>();
  /** the numbers of the last message at each address */
  private readonly last = new Map<string, number[]>();
  private socket: Socket | null = null;

  constructor(
    private readonly metrics: Metrics,
    private readonly now: () => number,
  ) {}

  /** Binds `host:port` (a port alone listens on every address). */
  async listen(hostPort: string): Promise<void> {
    const m = /^(?:(.+):)?(\d+)$/.exec(hostPort);
    const port = Number(m?.[2]);
    if (!m || !(port > 0 && port < 65536)) throw new LoadtestError('config', `--osc-listen ${hostPort}: host:port or a port, for example 0.0.0.0:9000`);
    const host = (m[1] ?? '0.0.0.0').replace(/^\[(.*)\]$/, '$1');
    const socket = createSocket(host.includes(':') ? 'udp6' : 'udp4');
    socket.on('message', (data) => this.received(data));
    await new Promise<void>((resolve, reject) => {
      socket.once('error', (e) => reject(new LoadtestError('config', `--osc-listen ${hostPort}: ${e.message}`)));
      socket.bind(port, host, () => resolve());
    });
    this.socket = socket;
  }

  /** The tag a String action of `phone` with `ref` carries in its value. */
  tag(phone: number, ref: string): string {
    return `p${phone}.${ref}`;
  }

  /** A tagged action was sent (planned for `intendedAt`). */
  sent(tag: string, intendedAt: number): void {
    this.tagged.set(tag, { intendedAt, acked: false });
  }

  /** It was stored: from now on it is lost unless it arrives. */
  acked(tag: string): void {
    const t = this.tagged.get(tag);
    if (t) t.acked = true;
  }

  private received(data: Buffer): void {
    let packet: OscPacketOutput;
    try {
      packet = fromBuffer(data);
    } catch {
      return void this.metrics.error('osc_not_decoded');
    }
    const now = this.now();
    for (const m of messages(packet)) {
      const numbers = m.args.filter((a) => a.type === 'float' || a.type === 'integer' || a.type === 'double').map((a) => Number(a.value));
      if (numbers.length > 0) this.last.set(m.address, numbers);
    }
    for (const value of strings(packet)) {
      const tag = TAG.exec(value)?.[1];
      const t = tag === undefined ? undefined : this.tagged.get(tag);
      if (!t) continue;
      this.tagged.delete(tag!);
      this.metrics.count('display_seen');
      this.metrics.record('display_ms', now - t.intendedAt);
    }
  }

  /** The numbers of the last message that arrived at `address`, or null. */
  shown(address: string): number[] | null {
    return this.last.get(address) ?? null;
  }

  /** The run ended: stored actions that never arrived are lost; the socket closes. */
  finish(): void {
    for (const t of this.tagged.values()) if (t.acked) this.metrics.count('display_lost');
    this.tagged.clear();
    this.socket?.close();
    this.socket = null;
  }
}

function messages(p: OscPacketOutput): { address: string; args: { type: string; value?: unknown }[] }[] {
  if (p.oscType === 'bundle') return p.elements.flatMap(messages);
  return [{ address: p.address, args: p.args }];
}

function strings(p: OscPacketOutput): string[] {
  if (p.oscType === 'bundle') return p.elements.flatMap(strings);
  return (p.args as { type: string; value?: unknown }[]).filter((a) => a.type === 'string').map((a) => String(a.value));
}
