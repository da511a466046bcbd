// The ceiling: a bare uWebSockets.js reply on this machine, measured in the same harness as the
// gateway so each scenario can be read as a ratio of it.
import { nativeUws } from '../gateway/http/uws.js';

const uws = nativeUws();
const port = Number(process.argv[2] ?? 0);
uws
  .App()
  .any('/*', (res) => {
    res.cork(() => res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end('{"success":true}'));
  })
  .listen('127.0.0.1', port, (socket) => {
    if (!socket) process.exit(1);
    process.stdout.write(`listening ${uws.us_socket_local_port(socket)}\n`);
  });
