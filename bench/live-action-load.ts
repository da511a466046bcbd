// The action load of bench -- live: `connections` raw live sockets (live-raw-socket.ts) that send
// action frames and count their answers at the byte level. The frames are made once, and every
// answer a socket reads is replaced by a new frame in one write for the whole read. A `ws` client
// costs a syscall and a mask per frame, and on the core it shares with Redis it could not keep
// bare uWS busy: it measured the generator, not the server.
import { setTimeout as sleep } from 'node:timers/promises';
import { cpuSplit } from './harness.js';
import { clientFrame, OP_LETTER, RawLiveSocket } from './live-raw-socket.js';

export interface SocketLoad {
  /** actions acked while the load ran */
  acked: number;
  perSecond: number;
  usPerAction: number;
  /** of usPerAction, the part in the kernel (system time: the sockets' reads and writes) */
  systemUsPerAction: number;
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
  /** at a `rate`: the frames of one write, to one socket in turn (the frames a server reads at once); 1 if not given */
  perWrite?: number;
}


/** A socket of the load: `onAnswers` is told the acks and errors of each read; `paged` resolves at its first page. */
class ActionSocket {
  onAnswers: (acks: number, errors: number) => void = () => {};
  readonly raw: RawLiveSocket;
  readonly paged: Promise<void>;

  constructor(url: URL, token: string) {
    let acks = 0;
    let errors = 0;
    let paged = () => {};
    let lost = (_: Error) => {};
    this.paged = new Promise((resolve, reject) => {
      paged = resolve;
      lost = reject;
    });
    this.raw = new RawLiveSocket(url, token, {
      frame: (op) => {
        if (op === OP_LETTER.ack) acks++;
        else if (op === OP_LETTER.error) errors++;
        else if (op === OP_LETTER.page) paged();
      },
      read: () => {
        if (acks + errors > 0) this.onAnswers(acks, errors);
        acks = errors = 0;
      },
      closed: () => lost(new Error('closed before its first page')),
    });
  }
}

/** How long a socket of the load may take to get its first page before it is opened again. */
const OPEN_TIMEOUT_MS = 10_000;
const OPEN_TRIES = 3;

/**
 * A socket that has its first page. One that uWS drops right after the asynchronous upgrade
 * (uNetworking/uWebSockets#1928, counted by the gateway) is opened again, as a phone would.
 */
async function openedSocket(url: URL, token: string): Promise<ActionSocket> {
  for (let attempt = 1; ; attempt++) {
    const s = new ActionSocket(url, token);
    let timer: NodeJS.Timeout | undefined;
    try {
      const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no page within ${OPEN_TIMEOUT_MS} ms`)), OPEN_TIMEOUT_MS)));
      await Promise.race([Promise.all([s.raw.upgraded, s.paged]), late]);
      return s;
    } catch (e) {
      s.raw.destroy();
      if (attempt === OPEN_TRIES) throw new Error(`a socket of the action load did not open in ${OPEN_TRIES} tries: ${String(e)}`);
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * Server CPU µs per acked action over `connections` sockets for `seconds`: each socket keeping
 * `inFlight` actions in flight, or `rate` a second over all of them at an even pace, `perWrite`
 * frames a write.
 */
export async function socketActions(spec: ActionLoadSpec): Promise<SocketLoad> {
  const url = new URL(spec.url);
  const sockets = await Promise.all(Array.from({ length: spec.connections }, (_, i) => openedSocket(url, spec.tokens[i % spec.tokens.length]!)));
  const frames = spec.bodies.map((b, i) => clientFrame(Buffer.from(JSON.stringify({ op: 'action', ref: String(i), ...b }))));
  let sent = 0;
  let acked = 0;
  let stop = false;
  /** the next `n` frames in one buffer: one write */
  const nextFrames = (n: number): Buffer => {
    const list: Buffer[] = [];
    for (let k = 0; k < n; k++) list.push(frames[sent++ % frames.length]!);
    return list.length === 1 ? list[0]! : Buffer.concat(list);
  };
  const cpu0 = cpuSplit(spec.pid);
  const t0 = performance.now();
  for (const s of sockets) {
    s.onAnswers = (acks, errors) => {
      acked += acks;
      if (!stop && spec.rate === 0) s.raw.write(nextFrames(acks + errors));
    };
    if (spec.rate === 0) s.raw.write(nextFrames(spec.inFlight));
  }
  if (spec.rate > 0) {
    // every millisecond, what is due by now goes out in writes of `perWrite` frames, to the sockets in turn
    const perWrite = spec.perWrite ?? 1;
    let turn = 0;
    const pacer = setInterval(() => {
      const due = Math.floor(((performance.now() - t0) / 1000) * spec.rate) - sent;
      for (let n = Math.floor(due / perWrite); n > 0; n--) sockets[turn++ % sockets.length]!.raw.write(nextFrames(perWrite));
    }, 1);
    await sleep(spec.seconds * 1000);
    clearInterval(pacer);
    await sleep(200); // the last answers
  } else await sleep(spec.seconds * 1000);
  stop = true;
  const elapsed = (performance.now() - t0) / 1000;
  const cpu1 = cpuSplit(spec.pid);
  const system = cpu1.system - cpu0.system;
  const cpu = cpu1.user - cpu0.user + system;
  for (const s of sockets) s.raw.destroy();
  return { acked, perSecond: acked / elapsed, usPerAction: (cpu * 1e6) / acked, systemUsPerAction: (system * 1e6) / acked, cpuShare: cpu / elapsed };
}
