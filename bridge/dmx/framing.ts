// DMX universes on the wire: E1.31 (sACN) data packets framed by the `sacn` library, and Art-Net 4
// ArtDmx packets framed here (docs/decisions.md says why). A DmxWire sends one universe's 512
// channels as one frame, over a UDP socket of its own: sACN to the universe's multicast group
// (239.255.<hi>.<lo>) or a unicast address, on port 5568; Art-Net to the broadcast address or a
// unicast one, on port 6454. Each frame carries the next sequence number; a last sACN frame can
// carry the Stream_Terminated option, which tells receivers to drop this source at once.
import { createHash } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import { Packet } from 'sacn';

export const SACN_PORT = 5568;
export const ARTNET_PORT = 6454;
/** E1.31 framing layer: the byte of the priority, and of the options (bit 6: Stream_Terminated). */
const SACN_PRIORITY_AT = 108;
const SACN_OPTIONS_AT = 112;
const STREAM_TERMINATED = 0x40;

export interface SacnUniverse {
  transport: 'sacn';
  universe: number;
  priority: number;
  sourceName: string;
}

export interface ArtnetUniverse {
  transport: 'artnet';
  /** the 15-bit port-address: net (7 bits), subnet and universe (4 bits each) */
  portAddress: number;
}

export type DmxUniverseId = SacnUniverse | ArtnetUniverse;

/** The multicast group of an sACN universe (E1.31 9.3.1). */
export function sacnGroup(universe: number): string {
  return `239.255.${universe >> 8}.${universe & 0xff}`;
}

/** An Art-Net port-address as net.subnet.universe. */
export function artnetName(portAddress: number): string {
  return `${portAddress >> 8}.${(portAddress >> 4) & 0xf}.${portAddress & 0xf}`;
}

/**
 * A source's CID (E1.31's 16-byte component identifier): stable for a bridge and its target, so a
 * receiver sees the same source across restarts, and two bridges never share one.
 */
export function sourceCid(bridgeId: string, target: string): Buffer {
  const id = createHash('sha1').update(`audience-bridge\0${bridgeId}\0${target}`).digest().subarray(0, 16);
  id[6] = (id[6]! & 0x0f) | 0x50; // a name-based UUID (version 5), variant 1
  id[8] = (id[8]! & 0x3f) | 0x80;
  return Buffer.from(id);
}

/** One E1.31 data packet of 512 channels. */
export function sacnPacket(u: SacnUniverse, cid: Buffer, sequence: number, channels: Uint8Array, terminated: boolean): Buffer {
  const payload: Record<number, number> = {};
  for (let i = 0; i < 512; i++) payload[i + 1] = channels[i]!;
  const buffer = new Packet({ universe: u.universe, sequence, payload, sourceName: u.sourceName, priority: u.priority, cid, useRawDmxValues: true }).buffer;
  // the library writes priority 0 as 100 and has no options: both set here
  buffer[SACN_PRIORITY_AT] = u.priority;
  buffer[SACN_OPTIONS_AT] = terminated ? STREAM_TERMINATED : 0;
  return buffer;
}

const ARTNET_ID = Buffer.from('Art-Net\0', 'latin1');
const OP_DMX = 0x5000;
const PROTOCOL_VERSION = 14;

/** One ArtDmx packet of 512 channels (Art-Net 4): sequence 1 to 255 (0 would turn resequencing off). */
export function artnetPacket(portAddress: number, sequence: number, channels: Uint8Array): Buffer {
  const b = Buffer.alloc(18 + 512);
  ARTNET_ID.copy(b, 0);
  b.writeUInt16LE(OP_DMX, 8);
  b.writeUInt16BE(PROTOCOL_VERSION, 10);
  b[12] = sequence;
  b[13] = 0; // physical input port: informational
  b[14] = portAddress & 0xff; // SubUni: subnet and universe
  b[15] = portAddress >> 8; // Net
  b.writeUInt16BE(512, 16);
  b.set(channels.subarray(0, 512), 18);
  return b;
}

export interface WireOptions {
  /** unicast to this address; absent: multicast (sACN) or broadcast (Art-Net) */
  address?: string;
  /** the interface address multicast and broadcast leave by */
  interface?: string;
  /** the port it sends to (default: the protocol's) */
  port?: number;
}

/** One universe's UDP output. send() resolves once the kernel took the datagram, rejects on a send error. */
export class DmxWire {
  private socket: Socket | null = null;
  private opening: Promise<Socket> | null = null;
  private sequence = 0;
  private readonly cid: Buffer;
  readonly destination: string;
  private readonly port: number;

  constructor(
    private readonly u: DmxUniverseId,
    private readonly o: WireOptions,
    cid: Buffer,
  ) {
    this.cid = cid;
    this.destination = o.address ?? (u.transport === 'sacn' ? sacnGroup(u.universe) : '255.255.255.255');
    this.port = o.port ?? (u.transport === 'sacn' ? SACN_PORT : ARTNET_PORT);
  }

  private open(): Promise<Socket> {
    if (this.socket) return Promise.resolve(this.socket);
    this.opening ??= new Promise<Socket>((resolve, reject) => {
      const socket = createSocket({ type: 'udp4', reuseAddr: true });
      socket.once('error', reject);
      socket.bind({ port: 0, ...(this.o.interface && { address: this.o.interface }) }, () => {
        socket.off('error', reject);
        socket.on('error', () => this.reset());
        if (this.u.transport === 'artnet' && this.o.address === undefined) socket.setBroadcast(true);
        if (this.u.transport === 'sacn' && this.o.address === undefined) {
          socket.setMulticastTTL(8);
          socket.setMulticastLoopback(true);
          if (this.o.interface) socket.setMulticastInterface(this.o.interface);
        }
        this.socket = socket;
        resolve(socket);
      });
    }).finally(() => (this.opening = null));
    return this.opening;
  }

  private reset(): void {
    this.socket?.close();
    this.socket = null;
  }

  /** Sends the universe's 512 channels; `terminated` marks an sACN source's last frames. */
  async send(channels: Uint8Array, terminated = false): Promise<void> {
    const socket = await this.open();
    let packet: Buffer;
    if (this.u.transport === 'sacn') {
      packet = sacnPacket(this.u, this.cid, this.sequence, channels, terminated);
      this.sequence = (this.sequence + 1) & 0xff;
    } else {
      this.sequence = (this.sequence % 255) + 1;
      packet = artnetPacket(this.u.portAddress, this.sequence, channels);
    }
    await new Promise<void>((resolve, reject) => socket.send(packet, this.port, this.destination, (e) => (e ? reject(e) : resolve())));
  }

  close(): void {
    this.reset();
  }
}
