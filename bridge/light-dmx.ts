// The lighting desk's way in: sACN (ANSI E1.31) into the bridge. Each layout's light canvas patches
// one fixture per zone in a universe (schemas/light.ts dmxFixtures); the bridge listens for those
// universes and turns each fixture's six channels into a look (the fixture profile, docs/light.md).
// A desk resends its universe many times a second whether or not it changed: only a fixture whose
// look changed is offered to the layout's light input (light-in.ts), which folds and appends it.
//
// Sources: of the desks sending a universe, the one with the highest sACN priority heard within
// the last SOURCE_TIMEOUT_MS plays it (E1.31's data loss timeout); between equal priorities, the
// newest packet. Preview data is not played. A source that stops or terminates its stream leaves
// the phones on their last look, as a fixture holds its last DMX: the desk (or an operator) turns
// them off. Packets are received by the `sacn` library (decoding, multicast membership).
import type { Socket } from 'node:dgram';
import { Receiver, type Packet } from 'sacn';
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { dmxFixtures, DMX_FIXTURE_CHANNELS, type LightLook } from '../schemas/light.js';
import type { LightIn } from './light-in.js';

/** E1.31's network data loss timeout: a source not heard for this long no longer holds its universe. */
export const SOURCE_TIMEOUT_MS = 2500;
/** Universes to listen for are read from the canvases this often (a re-import reaches the bridge this late at most). */
const REFRESH_MS = 1000;
const PREVIEW_DATA = 0x80;
const STREAM_TERMINATED = 0x40;

/** Channel values below this leave the strobe and pattern channels off. */
const CHANNEL_ON = 10;
/** The pattern channel's wave bands, 60 values each from CHANNEL_ON: the wave's direction (degrees; light-look.schema.json). */
const WAVE_DIRECTIONS = [0, 180, 90, 270] as const;
const WAVE_BAND = 60;

const round = (x: number, digits: number) => Number(x.toFixed(digits));
const hex2 = (v: number) => v.toString(16).padStart(2, '0');

/**
 * The look of one crowd fixture from its six channel values (missing ones are 0): dimmer, red,
 * green, blue, strobe, pattern. All six at 0 is the fixture released: the zone leaves light mode.
 * Strobe 10 to 255: 0.5 to 25 flashes a second asked (a phone shows at most 3). Pattern 10 to 249:
 * a wave, in four bands of 60 by direction (left to right, right to left, front to back, back to
 * front), its speed within the band 0.1 to 5 zone widths a second. A strobe outranks a wave.
 */
export function lookFromDmx(zone: string, channels: ArrayLike<number>): LightLook {
  const [dimmer = 0, red = 0, green = 0, blue = 0, strobe = 0, pattern = 0] = Array.from(channels);
  if (dimmer === 0 && red === 0 && green === 0 && blue === 0 && strobe === 0 && pattern === 0) return { zone, off: true };
  const look: LightLook = { zone, color: `#${hex2(red)}${hex2(green)}${hex2(blue)}`, brightness: round(dimmer / 255, 4) };
  if (strobe >= CHANNEL_ON) look.pattern = { type: 'strobe', hz: round(0.5 + ((strobe - CHANNEL_ON) * 24.5) / (255 - CHANNEL_ON), 2) };
  else if (pattern >= CHANNEL_ON && pattern < CHANNEL_ON + WAVE_DIRECTIONS.length * WAVE_BAND) {
    const step = pattern - CHANNEL_ON;
    look.pattern = { type: 'wave', direction: WAVE_DIRECTIONS[Math.floor(step / WAVE_BAND)]!, speed: round(0.1 + ((step % WAVE_BAND) * 4.9) / (WAVE_BAND - 1), 2) };
  }
  return look;
}

export type SacnIgnored = 'preview' | 'lower_priority' | 'not_dmx' | 'out_of_order';

export interface SacnSettings {
  /** UDP port (E1.31's is 5568) */
  port: number;
  /** the address of the interface the desk's network is on, for multicast; absent: the kernel's choice */
  interface?: string;
}

interface Source {
  priority: number;
  heardAt: number;
}

export class SacnIn {
  readonly counters = { packets: 0, ignored: new Map<SacnIgnored, number>() };
  private receiver: Receiver | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** the universe each light input plays, from its canvas */
  private readonly patched = new Map<LightIn, number>();
  private readonly sources = new Map<number, Map<string, Source>>();
  /** each input's last look per zone, as JSON: only a change is offered */
  private readonly offered = new Map<LightIn, Map<string, string>>();
  private warnedAt = -Infinity;

  constructor(
    private readonly inputs: readonly LightIn[],
    private readonly settings: SacnSettings,
    private readonly log: Logger,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Reads the canvases, listens for their universes, and follows re-imports. */
  async start(): Promise<void> {
    const receiver = new Receiver({ universes: [], port: this.settings.port, reuseAddr: true, ...(this.settings.interface && { iface: this.settings.interface }) });
    receiver.on('packet', (p) => this.packet(p));
    receiver.on('PacketCorruption', () => this.ignore('not_dmx', 'a datagram that is no sACN DMX data (another start code, or malformed)'));
    // the library reports any other failure to read a datagram (one too short, say) as out of order too
    receiver.on('PacketOutOfOrder', (e) => (/out of order/.test(e.message) ? this.ignore('out_of_order', 'a packet far out of sequence') : this.ignore('not_dmx', `a datagram that is no sACN (${e.message})`)));
    // memberships need the bound socket (the library binds it in its constructor)
    await new Promise<void>((resolve, reject) => {
      const socket = receiver['socket'] as Socket;
      socket.once('listening', resolve);
      socket.once('error', reject);
    }).catch((e: unknown) => {
      receiver.close();
      throw new Error(`sACN input cannot listen on UDP port ${this.settings.port}: ${(e as Error).message}`);
    });
    receiver.on('error', (e) => this.warn(`sACN input: ${e.message}`));
    this.receiver = receiver;
    await this.refresh();
    this.timer = setInterval(() => void this.refresh(), REFRESH_MS);
    this.timer.unref();
  }

  /** The universes listened for now. */
  get universes(): readonly number[] {
    return this.receiver?.universes ?? [];
  }

  private async refresh(): Promise<void> {
    for (const input of this.inputs) {
      try {
        const canvas = await input.canvasNow();
        const universe = canvas?.dmx?.universe;
        if (universe === undefined) this.patched.delete(input);
        else this.patched.set(input, universe);
      } catch (e) {
        this.warn(`sACN input: could not read the light canvas of ${input.layoutId} (Redis away?): ${(e as Error).message}`);
      }
    }
    const wanted = new Set(this.patched.values());
    const r = this.receiver;
    if (!r) return;
    for (const u of [...r.universes]) {
      if (wanted.has(u)) continue;
      try {
        r.removeUniverse(u);
      } catch {
        r.universes = r.universes.filter((x) => x !== u); // the membership went with its interface
      }
    }
    for (const u of wanted) {
      try {
        r.addUniverse(u);
      } catch (e) {
        this.warn(`sACN input: cannot listen for universe ${u}${this.settings.interface ? ` on ${this.settings.interface}` : ''} (tried again): ${(e as Error).message}`);
      }
    }
  }

  private packet(p: Packet): void {
    if (p.options & PREVIEW_DATA) return this.ignore('preview', 'preview data');
    const cid = p.cid.toString('hex');
    const now = this.now();
    let sources = this.sources.get(p.universe);
    if (!sources) this.sources.set(p.universe, (sources = new Map<string, Source>()));
    if (p.options & STREAM_TERMINATED) {
      sources.delete(cid);
      return;
    }
    sources.set(cid, { priority: p.priority, heardAt: now });
    let top = 0;
    for (const [id, s] of sources) {
      if (now - s.heardAt > SOURCE_TIMEOUT_MS) sources.delete(id);
      else top = Math.max(top, s.priority);
    }
    if (p.priority < top) return this.ignore('lower_priority', `a source of priority ${p.priority} below another's ${top}`);
    const slots = p.payloadAsBuffer;
    if (!slots) return;
    this.counters.packets++;
    for (const [input, universe] of this.patched) {
      if (universe !== p.universe) continue;
      const canvas = input.canvasCached();
      if (!canvas) continue;
      let last = this.offered.get(input);
      if (!last) this.offered.set(input, (last = new Map<string, string>()));
      for (const f of dmxFixtures(canvas)) {
        const look = lookFromDmx(f.zone, slots.subarray(f.address - 1, f.address - 1 + DMX_FIXTURE_CHANNELS));
        const json = JSON.stringify(look);
        if (last.get(f.zone) === json) continue;
        last.set(f.zone, json);
        input.offer(look);
      }
    }
  }

  private ignore(reason: SacnIgnored, why: string): void {
    this.counters.ignored.set(reason, (this.counters.ignored.get(reason) ?? 0) + 1);
    if (reason !== 'lower_priority') this.warn(`sACN input ignored ${why} (counted)`);
  }

  private warn(message: string): void {
    if (this.now() - this.warnedAt < 10_000) return;
    this.warnedAt = this.now();
    this.log.warn(`${message}; said at most every 10 s`);
  }

  close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    const r = this.receiver;
    this.receiver = null;
    return new Promise((resolve) => (r ? r.close(() => resolve()) : resolve()));
  }
}

/** The sACN input's counters as Prometheus metrics. */
export function registerSacnMetrics(registry: Registry, input: SacnIn): void {
  new Counter({ name: 'audience_bridge_sacn_packets_total', help: 'sACN DMX packets played (from the highest-priority source of a universe a canvas patches).', registers: [registry], collect() {
    this.reset();
    this.inc(input.counters.packets);
  } });
  new Counter({ name: 'audience_bridge_sacn_ignored_total', help: 'sACN packets not played, by reason (preview, lower_priority, not_dmx, out_of_order).', labelNames: ['reason'], registers: [registry], collect() {
    this.reset();
    for (const [reason, n] of input.counters.ignored) this.labels(reason).inc(n);
  } });
}
