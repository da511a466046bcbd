// A UDP sink for benchmarks: counts datagrams and the OSC messages inside their bundles, and
// prints a JSON line with the counts and first/last arrival times whenever asked (any stdin line;
// the line `reset` zeroes them first).
import { createSocket } from 'node:dgram';
import { createInterface } from 'node:readline';

let datagrams = 0;
let messages = 0;
let bytes = 0;
let first = 0;
let last = 0;

/** Messages in a bundle datagram: walk the size-prefixed elements, recursing into inner bundles. */
function count(d: Buffer): number {
  if (d.subarray(0, 8).toString('latin1') !== '#bundle\0') return 1;
  let n = 0;
  for (let at = 16; at + 4 <= d.length; ) {
    const size = d.readInt32BE(at);
    n += count(d.subarray(at + 4, at + 4 + size));
    at += 4 + size;
  }
  return n;
}

const socket = createSocket('udp4');
socket.on('message', (d) => {
  const now = performance.timeOrigin + performance.now();
  if (datagrams === 0) first = now;
  last = now;
  datagrams++;
  bytes += d.length;
  messages += count(d);
});
socket.bind(0, '127.0.0.1', () => process.stdout.write(`listening ${socket.address().port}\n`));
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line === 'reset') datagrams = messages = bytes = first = last = 0;
  process.stdout.write(`${JSON.stringify({ datagrams, messages, bytes, first, last })}\n`);
});
