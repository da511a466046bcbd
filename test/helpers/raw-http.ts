// Raw bytes over one TCP connection, for requests an HTTP client would refuse to send.
import { connect } from 'node:net';

/** Sends raw bytes, resolves with everything the server sent until it closed (or `ms` passed). */
export function raw(port: number, chunks: (string | Buffer)[], ms = 3000): Promise<{ text: string; closed: boolean; elapsed: number }> {
  return new Promise((resolve) => {
    const started = Date.now();
    const sock = connect(port, '127.0.0.1');
    let text = '';
    const done = (closed: boolean) => {
      clearTimeout(timer);
      sock.destroy();
      resolve({ text, closed, elapsed: Date.now() - started });
    };
    const timer = setTimeout(() => done(false), ms);
    sock.on('data', (d) => (text += d.toString()));
    sock.on('close', () => done(true));
    sock.on('error', () => {});
    sock.on('connect', () => {
      for (const c of chunks) sock.write(c);
    });
  });
}
