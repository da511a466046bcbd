// One load generator of bench -- live (a child process): opens `count` live sockets from one loopback
// source address, sharing the given tokens, and tells its parent on stdout (one JSON line each):
// {"opened"} once every socket has its first page; on stdin "report <pageId>" the arrival times of
// the page frames showing that page, the crowd frames received, and per light frame (by its id)
// the first and last arrival and how many sockets got it, since the last report (all then start
// again from nothing); "close" ends it. The sockets are raw (live-raw-socket.ts), so a
// generator does little more per frame than read it: its reads share the two cores with the
// servers, and are part of every page switch's time. Upgrades refused with 503 (the gateway's
// new-socket rate) are tried again a second or two later; a socket dropped before its first page,
// 100 ms later.
//   node dist/bench/live-socket-generator.js <ws url> <tokens file> <count> <source address> [first token]
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { OP_LETTER, RawLiveSocket, UpgradeRefused } from './live-raw-socket.js';

const [url = '', tokensFile = '', countText = '0', localAddress = '127.0.0.1', firstTokenText = '0'] = process.argv.slice(2);
/** this generator's first token: generators take consecutive tokens, so each socket is a participant of its own while there are tokens enough */
const firstToken = Number(firstTokenText);
const target = new URL(url.replace(/^ws/, 'http'));
const tokens = JSON.parse(readFileSync(tokensFile, 'utf8')) as string[];
const count = Number(countText);
const pageArrivals = new Map<string, number[]>();
const ACTIVE_PAGE = Buffer.from('"activePageId":"');
const LIGHT_ID = Buffer.from('"id":"');
let crowd = 0;
/** per light frame id: first and last arrival (ms), and sockets that got it */
const lights = new Map<string, [number, number, number]>();
let opened = 0;
/** the sockets open or opening: one refused or closed is dropped, so a generator whose upgrades were refused holds no more than one that was let in at once */
const sockets = new Set<RawLiveSocket>();
const say = (o: object) => process.stdout.write(`${JSON.stringify(o)}\n`);

/** A page frame's arrival, under the page it shows. */
function pageArrived(buf: Buffer, start: number, end: number): boolean {
  const at = Date.now();
  const from = buf.indexOf(ACTIVE_PAGE, start);
  if (from < 0 || from >= end) return false;
  const idStart = from + ACTIVE_PAGE.length;
  const page = buf.toString('latin1', idStart, buf.indexOf(0x22, idStart));
  const list = pageArrivals.get(page);
  if (list) list.push(at);
  else pageArrivals.set(page, [at]);
  return true;
}

/** A light frame's arrival, under its id. */
function lightArrived(buf: Buffer, start: number, end: number): void {
  const at = Date.now();
  const from = buf.indexOf(LIGHT_ID, start);
  if (from < 0 || from >= end) return;
  const idStart = from + LIGHT_ID.length;
  const id = buf.toString('latin1', idStart, buf.indexOf(0x22, idStart));
  const seen = lights.get(id);
  if (!seen) lights.set(id, [at, at, 1]);
  else {
    seen[1] = at;
    seen[2]++;
  }
}

function open(i: number): void {
  let first = true;
  const raw = new RawLiveSocket(
    target,
    tokens[(firstToken + i) % tokens.length]!,
    {
      frame: (op, buf, start, end) => {
        if (op === OP_LETTER.crowd) crowd++;
        else if (op === OP_LETTER.light) lightArrived(buf, start, end);
        else if (op === OP_LETTER.page && pageArrived(buf, start, end) && first) {
          first = false;
          if (++opened === count) say({ opened, failed: 0 });
        }
      },
      closed: () => {
        sockets.delete(raw);
        if (first) setTimeout(() => open(i), 100); // dropped before its page: reconnect
      },
    },
    localAddress,
  );
  raw.upgraded.catch((e: unknown) => {
    sockets.delete(raw);
    // 503: the gateway's rate of new sockets; anything else (a reset) is tried again too
    setTimeout(() => open(i), e instanceof UpgradeRefused && e.status === 503 ? 1000 + Math.random() * 1000 : 100);
  });
  sockets.add(raw);
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
    say({ page: arg, arrivals: pageArrivals.get(arg ?? '') ?? [], crowd, lights: [...lights] });
    pageArrivals.clear();
    crowd = 0;
    lights.clear();
  } else if (command === 'close') {
    for (const s of sockets) s.destroy();
    process.exit(0);
  }
});
