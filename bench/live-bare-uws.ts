// The live channel's floor: bare uWebSockets.js WebSockets on this machine, measured with the same
// generators as the gateway so each live figure can be read against it. It does the least the
// gateway's job takes:
//  - it upgrades every request to /live (selecting audience-control.v1, checking nothing), sends a
//    fixed page frame on open and subscribes the socket to one topic;
//  - it parses every frame (JSON.parse) and acks it with its `ref`, one send per frame; uWS corks
//    the sends made while it hands over the frames of one read, so acks of one read share a write,
//    as the gateway's do;
//  - a line `publish <text>` on stdin (a page) goes to the topic at once (uWS writes it to every
//    socket in C++);
//  - a line `crowd <text>` on stdin is the crowd's newest value: its own timer publishes the newest
//    one told since its last tick, 4 times a second. A loop that runs late sends the newest value once, not
//    every value it missed, as the gateway's crowd tick does.
// Several of these can listen on one port (SO_REUSEPORT), as gateway workers do.
// With BARE_LOADS_GATEWAY=1 (bench:live-perf --bare-loads-gateway) it first loads the gateway's
// whole module graph and leaves it unused: the same work in a process as big as the gateway's.
//   node dist/bench/live-bare-uws.js <port> <first page frame>
import { createInterface } from 'node:readline';
import { nativeUws } from '../gateway/http/uws.js';
import { LIVE_SUBPROTOCOL } from '../schemas/live-protocol.js';

if (process.env.BARE_LOADS_GATEWAY === '1') await import('../gateway/app.js');

const uws = nativeUws();
const port = Number(process.argv[2] ?? 0);
const firstPage = process.argv[3] ?? '{"op":"page"}';
const TOPIC = 'layout';
const CROWD_TICK_MS = 250;
let crowdNewest: string | null = null;

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
    message: (ws, message) => {
      const frame = JSON.parse(Buffer.from(message).toString()) as { ref?: unknown };
      ws.send(`{"op":"ack","ref":${JSON.stringify(String(frame.ref))}}`);
    },
  })
  .listen('127.0.0.1', port, (socket) => {
    if (!socket) process.exit(1);
    process.stdout.write(`listening ${uws.us_socket_local_port(socket)}\n`);
  });

createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.startsWith('publish ')) app.publish(TOPIC, line.slice('publish '.length));
  else if (line.startsWith('crowd ')) crowdNewest = line.slice('crowd '.length);
});
setInterval(() => {
  if (crowdNewest === null) return;
  app.publish(TOPIC, crowdNewest);
  crowdNewest = null;
}, CROWD_TICK_MS);
process.stdin.on('end', () => process.exit(0));
