// The action load of bench:live: `connections` WebSockets on raw TCP sockets that send action
// frames and count their answers at the byte level. The frames are made once (masked with the
// all-zero key, which RFC 6455 allows, so each is its payload behind a header), and every answer a
// socket reads is replaced by a new frame in one write for the whole read. A `ws` client costs a
// syscall and a mask per frame, and on the core it shares with Redis it could not keep bare uWS
// busy: it measured the generator, not the server.
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { cpuSeconds } from './harness.js';
import { liveSubprotocols } from '../schemas/live-protocol.js';

export interface SocketLoad {
  /** actions acked while the load ran */
  acked: number;
  perSecond: number;
  usPerAction: number;
  /** the server's CPU over the run, as a share of one core */
  cpuShare: number;
}

export interface ActionLoadSpec {
  /** the server's http://host:port */
  url: string;
  /** its process, whose CPU is measured */
  pid: number;
  tokens: readonly string[];
  /** action bodies (lid, type, value), sent in turn */
  bodies: readonly object[];
  connections: number;
  seconds: number;
  /** actions each socket keeps in flight (closed loop) */
  inFlight: number;
  /** actions a second over all sockets at an even pace (0: closed loop) */
  rate: number;
}


/** A client frame: FIN + text, masked with the key 0 (the payload stays as it is). */
function clientFrame(text: string): Buffer {
  const payload = Buffer.from(text);
  const header = payload.length < 126 ? Buffer.from([0x81, 0x80 | payload.length, 0, 0, 0, 0]) : Buffer.from([0x81, 0x80 | 126, payload.length >> 8, payload.length & 0xff, 0, 0, 0, 0]);
  return Buffer.concat([header, payload]);
}

/** A raw client socket: its answers are counted as whole server frames arrive. */
class RawLiveSocket {
  private pending: Buffer = Buffer.alloc(0);
  /** told the number of acks and errors in each read (after the first page frame) */
  onAnswers: (acks: number, errors: number) => void = () => {};

  private constructor(readonly socket: Socket) {}

  static open(url: URL, token: string): Promise<RawLiveSocket> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host: url.hostname, port: Number(url.port), noDelay: true });
      const raw = new RawLiveSocket(socket);
      let head = Buffer.alloc(0);
      let upgraded = false;
      let paged = false;
      socket.on('error', reject);
      socket.on('connect', () =>
        socket.write(
          `GET /live HTTP/1.1\r\nHost: ${url.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
            `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n` +
            `Sec-WebSocket-Protocol: ${liveSubprotocols(token).join(', ')}\r\n\r\n`,
        ),
      );
      socket.on('data', (chunk: Buffer) => {
        if (!upgraded) {
          head = Buffer.concat([head, chunk]);
          const end = head.indexOf('\r\n\r\n');
          if (end < 0) return;
          if (!head.subarray(0, 12).toString().endsWith('101')) return reject(new Error(`no upgrade: ${head.subarray(0, end).toString()}`));
          upgraded = true;
          chunk = head.subarray(end + 4);
        }
        const [acks, errors, page] = raw.read(chunk);
        if (page && !paged) {
          paged = true;
          resolve(raw);
        }
        if (acks + errors > 0) raw.onAnswers(acks, errors);
      });
    });
  }

  /** Counts the whole frames in what was read (a partial one waits for the next read). */
  private read(chunk: Buffer): [acks: number, errors: number, page: boolean] {
    const buf = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    let acks = 0;
    let errors = 0;
    let page = false;
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
      if (buf.length < start + length) break;
      const op = buf[start + 7]; // {"op":"a… ack, {"op":"e… error, {"op":"p… page
      if (op === 0x61) acks++;
      else if (op === 0x65) errors++;
      else if (op === 0x70) page = true;
      at = start + length;
    }
    this.pending = at < buf.length ? Buffer.from(buf.subarray(at)) : Buffer.alloc(0);
    return [acks, errors, page];
  }
}

/**
 * Server CPU µs per acked action over `connections` sockets for `seconds`: each socket keeping
 * `inFlight` actions in flight, or `rate` a second over all of them at an even pace.
 */
export async function socketActions(spec: ActionLoadSpec): Promise<SocketLoad> {
  const url = new URL(spec.url);
  const sockets = await Promise.all(Array.from({ length: spec.connections }, (_, i) => RawLiveSocket.open(url, spec.tokens[i % spec.tokens.length]!)));
  const frames = spec.bodies.map((b, i) => clientFrame(JSON.stringify({ op: 'action', ref: String(i), ...b })));
  let sent = 0;
  let acked = 0;
  let stop = false;
  /** the next `n` frames in one buffer: one write */
  const nextFrames = (n: number): Buffer => {
    const list: Buffer[] = [];
    for (let k = 0; k < n; k++) list.push(frames[sent++ % frames.length]!);
    return list.length === 1 ? list[0]! : Buffer.concat(list);
  };
  const cpu0 = cpuSeconds(spec.pid);
  const t0 = performance.now();
  for (const s of sockets) {
    s.onAnswers = (acks, errors) => {
      acked += acks;
      if (!stop && spec.rate === 0) s.socket.write(nextFrames(acks + errors));
    };
    if (spec.rate === 0) s.socket.write(nextFrames(spec.inFlight));
  }
  if (spec.rate > 0) {
    // every millisecond, what is due by now goes out, spread over the sockets in turn, one write each
    let turn = 0;
    const pacer = setInterval(() => {
      const due = Math.floor(((performance.now() - t0) / 1000) * spec.rate) - sent;
      if (due <= 0) return;
      const each = Math.floor(due / sockets.length);
      let extra = due - each * sockets.length;
      for (let k = 0; k < sockets.length && (each > 0 || extra > 0); k++) {
        const n = each + (extra-- > 0 ? 1 : 0);
        sockets[turn++ % sockets.length]!.socket.write(nextFrames(n));
      }
    }, 1);
    await sleep(spec.seconds * 1000);
    clearInterval(pacer);
    await sleep(200); // the last answers
  } else await sleep(spec.seconds * 1000);
  stop = true;
  const elapsed = (performance.now() - t0) / 1000;
  const cpu = cpuSeconds(spec.pid) - cpu0;
  for (const s of sockets) s.socket.destroy();
  return { acked, perSecond: acked / elapsed, usPerAction: (cpu * 1e6) / acked, cpuShare: cpu / elapsed };
}
