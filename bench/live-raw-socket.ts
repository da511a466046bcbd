// A live socket of the live scenario's loads on a raw TCP socket: it does the WebSocket handshake itself
// and reads the server's frames at the byte level, so a load costs little beside the server it
// measures. A `ws` client parses, unmasks and emits each frame in JavaScript; with tens of thousands
// of sockets on the 2 cores the servers share, that client is what a measurement would time.
// Client frames are masked with the all-zero key, which RFC 6455 allows: each is its payload behind
// a header, made once. A ping is answered with its pong, so the server's idle timeout holds.
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { SERVER_OP, SERVER_OP_AT, liveSubprotocols } from '../schemas/live-protocol.js';

/** What a raw socket is told. */
export interface RawHandlers {
  /** a whole text frame: the first letter of its `op` (`a`ck, `e`rror, `p`age, `c`rowd, …) and where its payload lies in `buf` */
  frame(op: number, buf: Buffer, start: number, end: number): void;
  /** after the frames of one read */
  read?(): void;
  /** the connection ended, after the upgrade */
  closed?(): void;
}

/** A refused upgrade: the server's status (503 when a gateway is at its rate of new sockets). */
export class UpgradeRefused extends Error {
  constructor(readonly status: number) {
    super(`upgrade refused with ${status}`);
  }
}

const OPCODE_CLOSE = 0x8;
const OPCODE_PING = 0x9;
const OPCODE_PONG = 0xa;
/** the first letters of the server's ops, as `frame` is told them (read at SERVER_OP_AT: the protocol's frame prefix) */
export const OP_LETTER = {
  ack: SERVER_OP.ack.charCodeAt(0), error: SERVER_OP.error.charCodeAt(0), page: SERVER_OP.page.charCodeAt(0), crowd: SERVER_OP.crowd.charCodeAt(0), light: SERVER_OP.light.charCodeAt(0),
} as const;

/** A client frame, FIN set, masked with the key 0 (the payload stays as it is). */
export function clientFrame(payload: Buffer, opcode = 0x1): Buffer {
  const first = 0x80 | opcode;
  const header = payload.length < 126 ? Buffer.from([first, 0x80 | payload.length, 0, 0, 0, 0]) : Buffer.from([first, 0x80 | 126, payload.length >> 8, payload.length & 0xff, 0, 0, 0, 0]);
  return Buffer.concat([header, payload]);
}

export class RawLiveSocket {
  readonly socket: Socket;
  /**
   * Settles at the end of the handshake: resolves at the 101 (frames that came with it reach
   * `on.frame` first), rejects with UpgradeRefused on any other status, or with the socket's error.
   */
  readonly upgraded: Promise<void>;
  private pending: Buffer = Buffer.alloc(0);

  /** Connects to `url`'s /live with `token` and upgrades, from `localAddress` if given. */
  constructor(url: URL, token: string, private readonly on: RawHandlers, localAddress?: string) {
    const socket = (this.socket = connect({ host: url.hostname, port: Number(url.port), noDelay: true, ...(localAddress && { localAddress }) }));
    this.upgraded = new Promise((resolve, reject) => {
      let head: Buffer | null = Buffer.alloc(0);
      socket.on('error', reject); // after the upgrade, a close follows
      socket.on('close', () => (head ? reject(new Error('closed before the upgrade')) : on.closed?.()));
      socket.on('connect', () =>
        socket.write(
          `GET /live HTTP/1.1\r\nHost: ${url.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
            `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n` +
            `Sec-WebSocket-Protocol: ${liveSubprotocols(token).join(', ')}\r\n\r\n`,
        ),
      );
      socket.on('data', (chunk: Buffer) => {
        if (head) {
          head = Buffer.concat([head, chunk]);
          const end = head.indexOf('\r\n\r\n');
          if (end < 0) return;
          const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head.subarray(0, 12).toString())?.[1] ?? 0);
          if (status !== 101) {
            socket.destroy();
            return reject(new UpgradeRefused(status));
          }
          chunk = head.subarray(end + 4);
          head = null;
          resolve();
        }
        this.read(chunk);
      });
    });
  }

  /** Hands over the whole frames in what was read; a partial one waits for the next read. */
  private read(chunk: Buffer): void {
    const buf = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    let at = 0;
    for (;;) {
      if (buf.length - at < 2) break;
      let length = buf[at + 1]! & 0x7f;
      let start = at + 2;
      if (length === 126) {
        if (buf.length - at < 4) break;
        length = buf.readUInt16BE(at + 2);
        start = at + 4;
      } else if (length === 127) {
        if (buf.length - at < 10) break;
        length = Number(buf.readBigUInt64BE(at + 2));
        start = at + 10;
      }
      const end = start + length;
      if (buf.length < end) break;
      const opcode = buf[at]! & 0x0f;
      if (opcode === OPCODE_PING) this.socket.write(clientFrame(Buffer.from(buf.subarray(start, end)), OPCODE_PONG));
      else if (opcode !== OPCODE_CLOSE && opcode !== OPCODE_PONG) this.on.frame(buf[start + SERVER_OP_AT] ?? 0, buf, start, end);
      at = end;
    }
    this.pending = at < buf.length ? Buffer.from(buf.subarray(at)) : Buffer.alloc(0);
    this.on.read?.();
  }

  write(data: Buffer): void {
    this.socket.write(data);
  }

  destroy(): void {
    this.socket.destroy();
  }
}
