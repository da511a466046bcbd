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
// With BARE_STORE_URL=redis://... (the storing floor) each frame is appended to
// the stream BARE_STORE_KEY before its ack (live-bare-store.ts): the least a server that stores
// every action before it acks can do.
// With BARE_LOADS_GATEWAY=1 (bench:lab -- live-perf --bare-loads-gateway) it first loads the gateway's
// whole module graph and leaves it unused: the same work in a process as big as the gateway's.
//   node dist/bench/live-bare-uws.js <port> <first page frame>
import { createInterface } from 'node:readline';
import type { WebSocket } from 'uWebSockets.js';
import { nativeUws } from '../gateway/http/uws.js';
import { LIVE_SUBPROTOCOL } from '../schemas/live-protocol.js';
import { FrameStore } from './live-bare-store.js';

if (process.env.BARE_LOADS_GATEWAY === '1') await import('../gateway/app.js');

const uws = nativeUws();
const port = Number(process.argv[2] ?? 0);
const firstPage = process.argv[3] ?? '{"op":"page"}';
const TOPIC = 'layout';
const CROWD_TICK_MS = 250;
let crowdNewest: string | null = null;

interface Socket {
  open: boolean;
}
type Ws = WebSocket<Socket>;
const ack = (ref: unknown) => `{"op":"ack","ref":${JSON.stringify(String(ref))}}`;

/** With a store, acks wait for their frames' call; then each socket's acks go out in one corked write. */
const store = process.env.BARE_STORE_URL
  ? new FrameStore<[Ws, Socket, unknown]>(process.env.BARE_STORE_URL, process.env.BARE_STORE_KEY ?? 'bare-live', (waiting) => {
      const bySocket = new Map<Ws, string[]>();
      for (const [ws, data, ref] of waiting) {
        if (!data.open) continue; // closed meanwhile (uWS throws on any call to a closed socket)
        const acks = bySocket.get(ws);
        if (acks) acks.push(ack(ref));
        else bySocket.set(ws, [ack(ref)]);
      }
      for (const [ws, acks] of bySocket) ws.cork(() => acks.forEach((a) => ws.send(a)));
    })
  : null;

const app = uws.App();
app
  .ws<Socket>('/live', {
    idleTimeout: 60,
    sendPingsAutomatically: true,
    maxBackpressure: 1 << 20,
    upgrade: (res, req, context) => {
      res.upgrade({ open: true }, req.getHeader('sec-websocket-key'), LIVE_SUBPROTOCOL, req.getHeader('sec-websocket-extensions'), context);
    },
    open: (ws) => {
      ws.send(firstPage);
      ws.subscribe(TOPIC);
    },
    message: (ws, message) => {
      const text = Buffer.from(message).toString();
      const frame = JSON.parse(text) as { ref?: unknown };
      if (store) store.add(text, [ws, ws.getUserData(), frame.ref]);
      else ws.send(ack(frame.ref));
    },
    close: (ws) => {
      ws.getUserData().open = false;
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
