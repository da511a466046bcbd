// A real UDP socket standing in for a display: records every datagram and decodes it with osc-min.
import { createSocket, type Socket } from 'node:dgram';
import { fromBuffer, type OscPacketOutput } from 'osc-min';

export interface ReceivedMessage {
  address: string;
  args: { type: string; value?: unknown }[];
  /** the enclosing bundle's timetag, [seconds since 1900, fraction] */
  timetag: [number, number] | null;
  /** this message's encoded bytes, as sent */
  raw: Buffer;
  /** when its datagram came (Date.now()) */
  at: number;
}

function messages(p: OscPacketOutput, tag: [number, number] | null): Omit<ReceivedMessage, 'raw' | 'at'>[] {
  if (p.oscType === 'message') return [{ address: p.address, args: p.args, timetag: tag }];
  return p.elements.flatMap((e) => messages(e, p.timetag));
}

/** The raw bytes of each message inside a datagram (bundle elements are size-prefixed). */
function rawMessages(d: Buffer): Buffer[] {
  if (d.subarray(0, 8).toString('latin1') !== '#bundle\0') return [d];
  const out: Buffer[] = [];
  for (let at = 16; at < d.length; ) {
    const size = d.readInt32BE(at);
    out.push(...rawMessages(d.subarray(at + 4, at + 4 + size)));
    at += 4 + size;
  }
  return out;
}

export class UdpSink {
  readonly datagrams: { at: number; data: Buffer }[] = [];
  readonly messages: ReceivedMessage[] = [];
  private socket: Socket | null = null;
  port = 0;

  async start(port = 0): Promise<number> {
    this.socket = createSocket('udp4');
    this.socket.on('message', (data) => {
      const at = Date.now();
      this.datagrams.push({ at, data });
      const raws = rawMessages(data);
      messages(fromBuffer(data), null).forEach((m, i) => this.messages.push({ ...m, raw: raws[i]!, at }));
    });
    await new Promise<void>((r) => this.socket!.bind(port, '127.0.0.1', r));
    this.port = this.socket.address().port;
    return this.port;
  }

  get target(): string {
    return `127.0.0.1:${this.port}`;
  }

  async stop(): Promise<void> {
    await new Promise<void>((r) => (this.socket ? this.socket.close(() => r()) : r()));
    this.socket = null;
  }
}

/**
 * A UDP port that refuses datagrams (the kernel answers ICMP port unreachable) and stays reserved
 * until released: a socket bound to it and connected elsewhere, so no other process can take the
 * port meanwhile (a closed sink's port can be reused by a parallel test and silently accept).
 */
export async function refusingPort(): Promise<{ port: number; release: () => Promise<void> }> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  // Connected to the discard port, it takes datagrams from 127.0.0.1:9 only; everything else is refused.
  await new Promise<void>((resolve) => socket.connect(9, '127.0.0.1', resolve));
  return { port: socket.address().port, release: () => new Promise<void>((resolve) => socket.close(() => resolve())) };
}
