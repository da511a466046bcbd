// OSC over TCP through the real processes: actions through a gateway process and a bridge process
// with three TCP targets, each read by an independent decoder: liblo's oscdump over
// length-prefixed TCP (tcp) and over SLIP (tcp-slip, which liblo tells apart by itself), and an
// RFC 1055 decoder written here from the RFC, whose packets osc-min decodes. Every value type
// arrives, in bundles with timetags; values whose bytes are SLIP's END and ESC survive the
// escaping; a display restarted mid-show gets the newest Slider value and every Button press made
// while it was away, once the bridge has reconnected.
import type { ChildProcess } from 'node:child_process';
import { createServer, type Server, type Socket } from 'node:net';
import { fromBuffer, type OscPacketOutput } from 'osc-min';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LayoutDefinition } from '../../schemas/types.js';
import { configFile, spawnBridge, stopProcess } from '../helpers/bridge.js';
import { eventually, mintToken, postAction } from '../helpers/gateway.js';
import { gatewayWithLayout, type GatewayProcess } from '../helpers/gateway-process.js';
import { startOscdump, type Oscdump } from '../helpers/oscdump.js';
import { useRedis } from '../helpers/redis.js';

const LAYOUT: LayoutDefinition = {
  layoutId: 'tcp-show',
  name: 'Over TCP',
  activePageId: 'main',
  pages: [{
    pageId: 'main',
    name: 'Main',
    controls: [
      { lid: 1, address: '/001', type: 'Button', props: { label: 'Go' } },
      { lid: 2, address: '/002', type: 'Slider', props: { label: 'Level' } },
      { lid: 3, address: '/003', type: 'Toggle', props: { label: 'Strobe' } },
      { lid: 4, address: '/004', type: 'Index', props: { label: 'Colour' }, options: [{ index: 0, label: 'Red' }, { index: 1, label: 'Green' }, { index: 2, label: 'Blue' }] },
      { lid: 5, address: '/005', type: 'String', props: { label: 'Shout' } },
      { lid: 6, address: '/006', type: 'XYPad', props: { label: 'Spot' } },
    ],
  }],
};
/** a float32 in 0..1 whose bytes hold SLIP's END (0xc0) and ESC (0xdb): 3f 40 c0 db */
const SLIP_BYTES = Buffer.from('3f40c0db', 'hex').readFloatBE(0);
const PLAYOUT_MS = 50;

/** An RFC 1055 receiver on a port the kernel picks: bytes to packets (END ends one; ESC ESC_END is END, ESC ESC_ESC is ESC), each decoded by osc-min. */
function slipServer(): Promise<{ server: Server; packets: OscPacketOutput[] }> {
  const packets: OscPacketOutput[] = [];
  const server = createServer((socket: Socket) => {
    let packet: number[] = [];
    let escaped = false;
    socket.on('data', (chunk: Buffer) => {
      for (const b of chunk) {
        if (escaped) {
          packet.push(b === 0xdc ? 0xc0 : b === 0xdd ? 0xdb : b);
          escaped = false;
        } else if (b === 0xdb) escaped = true;
        else if (b === 0xc0) {
          if (packet.length > 0) packets.push(fromBuffer(Buffer.from(packet)));
          packet = [];
        } else packet.push(b);
      }
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve({ server, packets }));
  });
}

/** The messages of decoded packets, each with its bundle's timetag (ms since 1970, or null for immediately). */
function messages(packets: OscPacketOutput[]): { address: string; args: unknown[]; at: number | null }[] {
  const out: { address: string; args: unknown[]; at: number | null }[] = [];
  const walk = (p: OscPacketOutput, at: number | null) => {
    if (p.oscType === 'bundle') {
      const [s, f] = p.timetag;
      for (const e of p.elements) walk(e, s === 0 && f === 1 ? null : (s - 2_208_988_800) * 1000 + (f / 2 ** 32) * 1000);
    } else out.push({ address: p.address, args: p.args.map((a) => (a as { value?: unknown }).value), at });
  };
  for (const p of packets) walk(p, null);
  return out;
}

const redis = useRedis();
let gateway: GatewayProcess;
let bridge: ChildProcess;
let lengthDump: Oscdump;
let slipDump: Oscdump;
let slip: { server: Server; packets: OscPacketOutput[] };
let apiKey: string;
let token: string;

beforeAll(async () => {
  let prefix: string;
  ({ gateway, apiKey, prefix } = await gatewayWithLayout(redis.get().server.url, LAYOUT));
  lengthDump = await startOscdump({ tcp: true });
  slipDump = await startOscdump({ tcp: true });
  slip = await slipServer();
  const port = (slip.server.address() as { port: number }).port;
  const config = configFile({
    redisUrl: redis.get().server.url,
    prefix,
    layouts: [{
      layoutId: LAYOUT.layoutId,
      tickHz: 100,
      playoutDelayMs: PLAYOUT_MS,
      maxAgeMs: 15_000,
      targets: [
        { host: '127.0.0.1', port: lengthDump.port, transport: 'tcp' },
        { host: '127.0.0.1', port: slipDump.port, transport: 'tcp-slip' },
        { host: '127.0.0.1', port, transport: 'tcp-slip' },
      ],
    }],
  });
  await new Promise((r) => setTimeout(r, 300)); // the oscdumps listen
  ({ child: bridge } = await spawnBridge(['--config', config]));
  token = await mintToken(gateway, LAYOUT.layoutId, apiKey);
}, 60_000);
afterAll(async () => {
  if (bridge) await stopProcess(bridge);
  lengthDump?.child.kill();
  slipDump?.child.kill();
  slip?.server.close();
  gateway?.child.kill('SIGTERM');
});

const act = async (body: object) => expect((await postAction(gateway, token, { layoutId: LAYOUT.layoutId, ...body })).status).toBe(200);

describe('OSC over TCP', () => {
  it('carries every value type in timed bundles, framed by length and by SLIP, to liblo and to an RFC 1055 decoder', async () => {
    const sentAt = Date.now();
    await act({ lid: 1, type: 'Button' });
    await act({ lid: 2, type: 'Slider', value: SLIP_BYTES });
    await act({ lid: 3, type: 'Toggle', value: true });
    await act({ lid: 4, type: 'Index', value: 2 });
    await act({ lid: 5, type: 'String', value: 'héllo wall' });
    await act({ lid: 6, type: 'XYPad', value: [0.25, 0.5] });
    const want = [['/001', [1]], ['/002', [SLIP_BYTES]], ['/003', [1]], ['/004', [2]], ['/005', ['héllo wall']], ['/006', [0.25, 0.5]]];
    await eventually(() => messages(slip.packets).length >= 6 && ['/006', '/005'].every((a) => lengthDump.saw(a) && slipDump.saw(a)));
    const got = messages(slip.packets);
    expect(got.map((m) => [m.address, m.args])).toEqual(want);
    for (const m of got) {
      expect(m.at).not.toBeNull(); // a timed bundle: gateway time + playoutDelayMs
      expect(m.at!).toBeGreaterThan(sentAt - 1000);
      expect(m.at!).toBeLessThan(Date.now() + PLAYOUT_MS + 1000);
    }
    for (const dump of [lengthDump, slipDump]) {
      expect(dump.lines.map((l) => l.address)).toEqual(want.map(([a]) => a));
      expect(dump.last('/002')).toEqual({ tags: 'f', values: [Number(SLIP_BYTES.toFixed(6))] });
      expect(dump.last('/006')).toEqual({ tags: 'ff', values: [0.25, 0.5] });
      expect(dump.lines.every((l) => l.timetag !== null)).toBe(true);
    }
  });

  it('reconnects to a display restarted mid-show and sends it the newest Slider value and every press made while it was away', async () => {
    const port = lengthDump.port;
    lengthDump.child.kill();
    await new Promise((r) => lengthDump.child.once('exit', r));
    for (const v of [0.1, 0.2, 0.3]) await act({ lid: 2, type: 'Slider', value: v });
    await act({ lid: 1, type: 'Button' });
    await act({ lid: 1, type: 'Button' });
    await new Promise((r) => setTimeout(r, 1500)); // the bridge finds it gone and backs off
    lengthDump = await startOscdump({ tcp: true, port });
    await eventually(() => lengthDump.lines.filter((l) => l.address === '/001').length >= 2 && lengthDump.saw('/002'), 10_000);
    expect(lengthDump.lines.filter((l) => l.address === '/002').map((l) => l.values[0])).toEqual([0.3]);
    expect(lengthDump.lines.filter((l) => l.address === '/001')).toHaveLength(2);
    // the other targets were served all along
    expect(slipDump.last('/002')).toEqual({ tags: 'f', values: [0.3] });
    expect(slipDump.lines.filter((l) => l.address === '/001')).toHaveLength(3);
  });
});
