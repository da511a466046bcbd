// An open-loop load generator: requests leave at evenly spaced times whatever the server does.
// autocannon's `overallRate` is a per-second budget per connection (reset by a 1 s interval), so it
// sends each second's requests as a burst at full speed and then idles: its "2,000/s" is a burst
// of 2,000 closed-loop requests. Here each request has a scheduled time (start + i / rate). Two
// latencies are kept: from the write to the socket (the server's response time, reported as
// `latencyMs`) and from the scheduled time (`fromScheduleMs`: adds the pacer's ~1 ms timer
// granularity and any wait for a free connection, so a stalled server is never hidden).
// node:http costs ~100 µs a request here, too much beside Redis on one core, so this speaks
// HTTP/1.1 on plain keep-alive sockets: requests are serialised once, replies are framed by their
// Content-Length (the servers under test always send one), one request in flight per socket.
import { connect, type Socket } from 'node:net';
import { percentiles, type LoadResult, type BuiltRequest } from './harness.js';

export interface OpenLoopSpec {
  name: string;
  url: string;
  /** requests per second, evenly spaced */
  rate: number;
  durationSec: number;
  /** keep-alive connections (one request in flight on each; no pipelining) */
  connections: number;
  /** sent in rotation */
  requests: readonly BuiltRequest[];
  /** when given (length ≥ rate × durationSec), each request's write time, ms since the epoch, at its index */
  writtenAt?: Float64Array;
  /** when given (length ≥ rate × durationSec), each request's latency from its write, ms, at its index (NaN for one not answered) */
  latencyAt?: Float64Array;
}

const HEADER_END = Buffer.from('\r\n\r\n');

function serialise(r: BuiltRequest, host: string): Buffer {
  const body = r.body === undefined ? null : Buffer.from(r.body);
  const given = Object.entries(r.headers).filter(([k]) => k.toLowerCase() !== 'content-length'); // framed here, once
  const head = [`${r.method} ${r.path} HTTP/1.1`, `host: ${host}`, ...given.map(([k, v]) => `${k}: ${v}`)];
  if (body) head.push(`content-length: ${body.length}`);
  const headBytes = Buffer.from(`${head.join('\r\n')}\r\n\r\n`);
  return body ? Buffer.concat([headBytes, body]) : headBytes;
}

/** One keep-alive connection: sends a request, calls back with the status once the reply is complete. */
class Connection {
  private buf: Buffer = Buffer.alloc(0);
  private onReply: ((status: number) => void) | null = null;
  busy = false;

  constructor(
    private readonly socket: Socket,
    onClose: () => void,
  ) {
    socket.setNoDelay(true);
    socket.on('data', (d: Buffer) => this.receive(d));
    socket.on('error', () => {});
    socket.on('close', onClose);
  }

  static open(host: string, port: number, onClose: () => void): Promise<Connection> {
    return new Promise((resolve, reject) => {
      const s = connect({ host, port }, () => resolve(new Connection(s, onClose)));
      s.once('error', reject);
    });
  }

  send(bytes: Buffer, onReply: (status: number) => void): void {
    this.busy = true;
    this.onReply = onReply;
    this.socket.write(bytes);
  }

  private receive(d: Buffer): void {
    this.buf = this.buf.length === 0 ? d : Buffer.concat([this.buf, d]);
    const end = this.buf.indexOf(HEADER_END);
    if (end < 0) return;
    const head = this.buf.toString('latin1', 0, end);
    const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
    if (this.buf.length < end + 4 + length) return;
    this.buf = this.buf.subarray(end + 4 + length);
    const status = Number(head.slice(9, 12));
    const reply = this.onReply;
    this.onReply = null;
    this.busy = false;
    reply?.(status);
  }

  close(): void {
    this.socket.destroy();
  }
}

export async function openLoop(spec: OpenLoopSpec): Promise<LoadResult> {
  const url = new URL(spec.url);
  const port = Number(url.port);
  const wire = spec.requests.map((r) => serialise(r, url.host));
  const total = Math.round(spec.rate * spec.durationSec);
  const latencies = new Float64Array(total).fill(NaN);
  const fromSchedule = new Float64Array(total).fill(NaN);
  let answered = 0;
  let non2xx = 0;
  const statuses: Record<string, number> = {};
  let errors = 0;
  let settle = (): void => {};
  const lost = (): void => {
    errors++; // a connection that closes loses the request in flight on it
    settle();
  };
  const conns = await Promise.all(Array.from({ length: spec.connections }, () => Connection.open(url.hostname, port, lost)));
  const waiting: number[] = []; // due requests with no idle connection yet
  let sent = 0;
  const start = performance.now();

  const dispatch = (conn: Connection): void => {
    const i = waiting.shift();
    if (i === undefined) return;
    const scheduled = start + (i * 1000) / spec.rate;
    const written = performance.now();
    if (spec.writtenAt) spec.writtenAt[i] = performance.timeOrigin + written;
    conn.send(wire[i % wire.length]!, (status) => {
      const now = performance.now();
      latencies[i] = now - written;
      if (spec.latencyAt) spec.latencyAt[i] = latencies[i];
      fromSchedule[i] = now - scheduled;
      answered++;
      if (status < 200 || status >= 300) non2xx++;
      statuses[status] = (statuses[status] ?? 0) + 1;
      settle();
      dispatch(conn);
    });
  };

  return new Promise((resolve) => {
    let finished = false;
    const finish = (): void => {
      if (finished) return;
      finished = true;
      clearInterval(pacer);
      clearTimeout(deadline);
      for (const c of conns) c.close();
      const answeredOnly = (a: Float64Array) => percentiles(a.filter((v) => !Number.isNaN(v)).sort());
      resolve({
        fromScheduleMs: answeredOnly(fromSchedule),
        name: spec.name,
        requestsPerSec: answered / ((performance.now() - start) / 1000),
        latencyMs: answeredOnly(latencies),
        total: answered,
        non2xx,
        statuses,
        errors: total - answered,
      });
    };
    settle = () => {
      if (answered + errors >= total) finish();
    };
    // Node timers have millisecond resolution: each 1 ms wake-up releases every request now due.
    const pacer = setInterval(() => {
      const due = Math.min(total, Math.floor(((performance.now() - start) * spec.rate) / 1000));
      while (sent < due) waiting.push(sent++);
      for (const c of conns) {
        if (waiting.length === 0) break;
        if (!c.busy) dispatch(c);
      }
      if (sent >= total) clearInterval(pacer);
    }, 1);
    // Answers still missing 10 s after the last request was due count as errors.
    const deadline = setTimeout(finish, spec.durationSec * 1000 + 10_000);
  });
}
