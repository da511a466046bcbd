// One load generator of bench:live (a child process): opens `count` live sockets from one loopback
// source address, sharing the given tokens, and tells its parent on stdout (one JSON line each):
// {"opened"} once every socket has its first page; on stdin "report <pageId>" the arrival times of
// the page frames showing that page and the crowd frames received since the last report (both then
// start again from nothing); "close"
// ends it. Upgrades refused with 503 (the gateway's new-socket rate) are tried again a second later.
//   node dist/bench/live-socket-generator.js <ws url> <tokens file> <count> <source address>
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import WebSocket from 'ws';
import { liveSubprotocols } from '../schemas/live-protocol.js';

const [url = '', tokensFile = '', countText = '0', localAddress = '127.0.0.1'] = process.argv.slice(2);
const tokens = JSON.parse(readFileSync(tokensFile, 'utf8')) as string[];
const count = Number(countText);
const pageArrivals = new Map<string, number[]>();
let crowd = 0;
let opened = 0;
const failed = 0;
const sockets: WebSocket[] = [];
const say = (o: object) => process.stdout.write(`${JSON.stringify(o)}\n`);

function open(i: number): void {
  const ws = new WebSocket(url, liveSubprotocols(tokens[i % tokens.length]!), { localAddress, perMessageDeflate: false });
  let first = true;
  ws.on('message', (data: Buffer) => {
    const text = data.toString();
    if (text.startsWith('{"op":"crowd"')) return void crowd++;
    if (!text.startsWith('{"op":"page"')) return;
    const page = /"activePageId":"([^"]+)"/.exec(text)![1]!;
    const at = Date.now();
    const list = pageArrivals.get(page) ?? [];
    list.push(at);
    pageArrivals.set(page, list);
    if (first) {
      first = false;
      if (++opened + failed === count) say({ opened, failed });
    }
  });
  ws.on('unexpected-response', (_req, res) => {
    res.resume();
    ws.terminate();
    setTimeout(() => open(i), 1000 + Math.random() * 1000); // 503: the gateway's rate of new sockets
  });
  ws.on('error', () => {});
  ws.on('close', (code) => {
    if (first && code === 1006) setTimeout(() => open(i), 100); // dropped before its page: reconnect
  });
  sockets.push(ws);
}

// paced: a burst would be refused by LIVE_NEW_SOCKETS_PER_SECOND anyway
let next = 0;
const pace = setInterval(() => {
  for (let k = 0; k < 100 && next < count; k++) open(next++);
  if (next >= count) clearInterval(pace);
}, 50);

createInterface({ input: process.stdin }).on('line', (line) => {
  const [command, arg] = line.split(' ');
  if (command === 'report') {
    say({ page: arg, arrivals: pageArrivals.get(arg ?? '') ?? [], crowd });
    pageArrivals.clear();
    crowd = 0;
  } else if (command === 'close') {
    for (const ws of sockets) ws.terminate();
    process.exit(0);
  }
});
