// The ceiling: a bare uWebSockets.js reply on this machine, measured in the same harness as the
// gateway so each scenario can be read as a ratio of it. `--read-body` also reads the request body
// with the gateway's own readBody (onData, each chunk copied) before replying: the cost of body delivery.
import type { HttpResponse } from 'uWebSockets.js';
import { readBody } from '../gateway/http/body.js';
import { nativeUws } from '../gateway/http/uws.js';

const uws = nativeUws();
const port = Number(process.argv[2] ?? 0);
const withBody = process.argv.includes('--read-body');
const reply = (res: HttpResponse): void => {
  res.cork(() => res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end('{"success":true}'));
};
uws
  .App()
  .any('/*', (res) => {
    if (!withBody) {
      reply(res);
      return;
    }
    let aborted = false;
    res.onAborted(() => (aborted = true));
    readBody(res, Number.MAX_SAFE_INTEGER, {
      body: () => {
        if (!aborted) reply(res);
      },
      tooLarge: () => {},
    });
  })
  .listen('127.0.0.1', port, (socket) => {
    if (!socket) process.exit(1);
    process.stdout.write(`listening ${uws.us_socket_local_port(socket)}\n`);
  });
