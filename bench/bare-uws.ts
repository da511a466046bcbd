// The ceiling: a bare uWebSockets.js reply on this machine, measured in the same harness as the
// gateway so each scenario can be read as a ratio of it. `--read-body` also reads the request body
// (onData, each chunk copied, as the gateway must) before replying: the cost of body delivery.
import type { HttpResponse } from 'uWebSockets.js';
import { nativeUws } from '../gateway/http/uws.js';

const uws = nativeUws();
const port = Number(process.argv[2] ?? 0);
const readBody = process.argv.includes('--read-body');
const reply = (res: HttpResponse): void => {
  res.cork(() => res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end('{"success":true}'));
};
uws
  .App()
  .any('/*', (res) => {
    if (!readBody) {
      reply(res);
      return;
    }
    let aborted = false;
    res.onAborted(() => (aborted = true));
    const chunks: Buffer[] = [];
    res.onData((chunk, isLast) => {
      chunks.push(Buffer.from(chunk.slice(0)));
      if (isLast && !aborted) reply(res);
    });
  })
  .listen('127.0.0.1', port, (socket) => {
    if (!socket) process.exit(1);
    process.stdout.write(`listening ${uws.us_socket_local_port(socket)}\n`);
  });
