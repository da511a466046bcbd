// The live channel's floor: bare uWebSockets.js WebSockets on this machine, measured with the same
// generators as the gateway so each live figure can be read against it. It upgrades every request
// to /live (selecting audience-control.v1, checking nothing), sends a fixed page frame on open and
// subscribes the socket to one topic, answers every frame with a fixed ack, and publishes each line
// `publish <text>` it reads on stdin to the topic (uWS writes it to every socket in C++). Several of
// these can listen on one port (SO_REUSEPORT), as gateway workers do.
//   node dist/bench/live-bare-uws.js <port> <first page frame>
import { createInterface } from 'node:readline';
import { nativeUws } from '../gateway/http/uws.js';
import { LIVE_SUBPROTOCOL } from '../schemas/live-protocol.js';

const uws = nativeUws();
const port = Number(process.argv[2] ?? 0);
const firstPage = process.argv[3] ?? '{"op":"page"}';
const TOPIC = 'layout';
const ACK = '{"op":"ack","ref":"0"}';

const app = uws.App();
app
  .ws('/live', {
    idleTimeout: 60,
    sendPingsAutomatically: true,
    maxBackpressure: 1 << 20,
    upgrade: (res, req, context) => {
      res.upgrade({}, req.getHeader('sec-websocket-key'), LIVE_SUBPROTOCOL, req.getHeader('sec-websocket-extensions'), context);
    },
    open: (ws) => {
      ws.send(firstPage);
      ws.subscribe(TOPIC);
    },
    message: (ws) => {
      ws.send(ACK);
    },
  })
  .listen('127.0.0.1', port, (socket) => {
    if (!socket) process.exit(1);
    process.stdout.write(`listening ${uws.us_socket_local_port(socket)}\n`);
  });

createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.startsWith('publish ')) app.publish(TOPIC, line.slice('publish '.length));
});
process.stdin.on('end', () => process.exit(0));
