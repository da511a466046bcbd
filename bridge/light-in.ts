// A layout's light input: OSC looks (light-osc.ts) on the layout's lightOscPort and the desk's sACN
// fixtures (light-dmx.ts), folded to at most LOOKS_PER_SECOND appends a second per zone, and appended to the layout's light stream, from which
// every gateway sends them to the phones (docs/light.md). Looks that come faster than that are
// folded into the newest of each zone, in the order they came: a look for every zone (*) supersedes
// the zones' looks waiting before it. A look for a zone the layout's canvas does not light, or for a
// layout without a canvas, is refused and counted; so is a datagram that is no OSC. An append that
// Redis refuses is tried again with what is newest by then: a look is superseded, never lost.
import { createSocket, type Socket } from 'node:dgram';
import { fromBuffer, type OscPacketOutput } from 'osc-min';
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import type { RedisClient } from '../runtime/redis.js';
import { LIGHT_STREAM_MAXLEN, lightCanvas, zoneOnCanvas, EVERY_ZONE, type LightCanvas, type LightCanvasDefinition, type LightLook } from '../schemas/light.js';
import { layoutKey, lightStreamKey } from '../schemas/redis-keys.js';
import { lookFromOsc, type LightRefusal, type OscInArg } from './light-osc.js';

/** Appends a second per layout at most, each with each zone's newest look: DMX's refresh rate. */
export const LOOKS_PER_SECOND = 44;
/** The layout's canvas is read again after this long (a re-import reaches the bridge this late at most). */
const CANVAS_TTL_MS = 1000;
const RETRY_MS = 250;

export type LightInRefusal = LightRefusal | 'not_osc' | 'no_canvas' | 'zone_not_on_canvas';

export interface LightInCounters {
  /** OSC messages taken as looks */
  received: number;
  /** looks appended to the light stream */
  appended: number;
  /** looks superseded by a newer one of their zone before they were appended */
  folded: number;
  /** appends Redis refused (tried again) */
  appendErrors: number;
  refused: Map<LightInRefusal, number>;
}

export class LightIn {
  readonly counters: LightInCounters = { received: 0, appended: 0, folded: 0, appendErrors: 0, refused: new Map() };
  /** the looks waiting for the next append, by zone, in the order they came */
  private readonly waiting = new Map<string, LightLook>();
  private timer: NodeJS.Timeout | null = null;
  private lastAppend = -Infinity;
  private appending = false;
  private canvas: { value: LightCanvas | null; readAt: number } | null = null;
  private socket: Socket | null = null;
  private warnedAt = -Infinity;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    readonly layoutId: string,
    private readonly log: Logger,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Listens for OSC on host:port (0: a free one); resolves with the port. */
  async listen(host: string, port: number): Promise<number> {
    const socket = createSocket(host.includes(':') ? 'udp6' : 'udp4');
    socket.on('message', (data) => this.datagram(data));
    socket.on('error', (e) => this.log.warn({ err: e.message, layoutId: this.layoutId }, 'light OSC input: socket error'));
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(port, host, () => resolve());
    });
    this.socket = socket;
    return socket.address().port;
  }

  private datagram(data: Buffer): void {
    let packet: OscPacketOutput;
    try {
      packet = fromBuffer(data);
    } catch {
      return this.refuse('not_osc', `${data.length} bytes that are no OSC`);
    }
    for (const m of messagesOf(packet)) {
      const r = lookFromOsc(m.address, m.args as OscInArg[]);
      if ('refused' in r) this.refuse(r.refused, r.why);
      else this.offer(r.look);
    }
  }

  /** A look to append: folded with the waiting ones, appended at the next slot. */
  offer(look: LightLook): void {
    this.counters.received++;
    if (look.zone === EVERY_ZONE) {
      this.counters.folded += this.waiting.size;
      this.waiting.clear();
    } else if (this.waiting.delete(look.zone)) this.counters.folded++;
    this.waiting.set(look.zone, look);
    this.schedule();
  }

  private schedule(delay = Math.max(0, this.lastAppend + 1000 / LOOKS_PER_SECOND - this.now())): void {
    if (this.timer || this.appending) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.append();
    }, delay);
  }

  private async append(): Promise<void> {
    if (this.waiting.size === 0) return;
    this.appending = true;
    const looks = [...this.waiting.values()];
    this.waiting.clear();
    this.lastAppend = this.now();
    let retry = false;
    try {
      const canvas = await this.canvasNow();
      const playable = looks.filter((l) => {
        if (!canvas) this.refuse('no_canvas', `layout ${this.layoutId} declares no light canvas`);
        else if (!zoneOnCanvas(canvas, l.zone)) this.refuse('zone_not_on_canvas', `the light canvas of ${this.layoutId} does not light zone ${l.zone}`);
        else return true;
        return false;
      });
      if (playable.length > 0) {
        const key = lightStreamKey(this.prefix, this.layoutId);
        const pipeline = this.redis.pipeline();
        for (const l of playable) pipeline.xadd(key, 'MAXLEN', '~', LIGHT_STREAM_MAXLEN, '*', 'look', JSON.stringify(l));
        const results = (await pipeline.exec()) ?? [];
        const failed = results.findIndex(([e]) => e !== null);
        this.counters.appended += failed === -1 ? playable.length : failed;
        if (failed !== -1) throw results[failed]![0] as Error;
      }
    } catch (e) {
      this.counters.appendErrors++;
      if (this.now() - this.warnedAt > 10_000) {
        this.warnedAt = this.now();
        this.log.warn({ err: (e as Error).message, layoutId: this.layoutId }, 'light input: could not append looks (Redis away?); trying again with the newest');
      }
      // put back what nothing newer replaced meanwhile (each XADD is whole: a retry may repeat the last one, harmless)
      const newer = new Map(this.waiting);
      this.waiting.clear();
      if (!newer.has(EVERY_ZONE)) for (const l of looks) if (!newer.has(l.zone)) this.waiting.set(l.zone, l);
      for (const [zone, l] of newer) this.waiting.set(zone, l);
      retry = true;
    } finally {
      this.appending = false;
    }
    if (this.waiting.size > 0) this.schedule(retry ? RETRY_MS : undefined);
  }

  /** The canvas as last read (null: none, or not read yet). */
  canvasCached(): LightCanvas | null {
    return this.canvas?.value ?? null;
  }

  /** The layout's canvas, read again once CANVAS_TTL_MS old. */
  async canvasNow(): Promise<LightCanvas | null> {
    if (this.canvas && this.now() - this.canvas.readAt < CANVAS_TTL_MS) return this.canvas.value;
    const [light, zones] = await this.redis.hmget(layoutKey(this.prefix, this.layoutId), 'light', 'zones');
    const value = light ? lightCanvas(JSON.parse(light) as LightCanvasDefinition, zones ? (JSON.parse(zones) as string[]) : []) : null;
    this.canvas = { value, readAt: this.now() };
    return value;
  }

  private refuse(reason: LightInRefusal, why: string): void {
    this.counters.refused.set(reason, (this.counters.refused.get(reason) ?? 0) + 1);
    if (this.now() - this.warnedAt > 10_000) {
      this.warnedAt = this.now();
      this.log.warn({ layoutId: this.layoutId, reason }, `light input refused a look: ${why} (counted; said at most every 10 s)`);
    }
  }

  /** Stops listening; what waits is appended first. */
  async close(): Promise<void> {
    this.socket?.close();
    this.socket = null;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.waiting.size > 0) await this.append();
  }
}

/** The messages of a packet, a bundle's in order (their timetags are not waited for: a look starts lightLeadMs after it is appended). */
function messagesOf(p: OscPacketOutput): { address: string; args: unknown[] }[] {
  return p.oscType === 'bundle' ? p.elements.flatMap(messagesOf) : [{ address: p.address, args: p.args }];
}

/** The light inputs' counters as Prometheus metrics, by layout (and a refusal's reason, a bounded set). */
export function registerLightMetrics(registry: Registry, inputs: readonly LightIn[]): void {
  const per: [keyof Omit<LightInCounters, 'refused'>, string, string][] = [
    ['received', 'audience_bridge_light_looks_received_total', 'Light looks the input took (OSC messages, and fixtures the desk changed over sACN), by layout.'],
    ['appended', 'audience_bridge_light_looks_appended_total', "Light looks appended to the layout's light stream, by layout."],
    ['folded', 'audience_bridge_light_looks_folded_total', "Light looks superseded by a newer one of their zone before they were appended (over 44 a second), by layout."],
    ['appendErrors', 'audience_bridge_light_append_errors_total', 'Appends of light looks Redis refused (tried again with the newest), by layout.'],
  ];
  for (const [field, name, help] of per) {
    new Counter({ name, help, labelNames: ['layout'], registers: [registry], collect() {
      this.reset();
      for (const i of inputs) this.labels(i.layoutId).inc(i.counters[field]);
    } });
  }
  new Counter({ name: 'audience_bridge_light_refused_total', help: 'OSC datagrams and messages the light input refused, by layout and reason (not_osc, address, arguments, value, no_canvas, zone_not_on_canvas).', labelNames: ['layout', 'reason'], registers: [registry], collect() {
    this.reset();
    for (const i of inputs) for (const [reason, n] of i.counters.refused) this.labels(i.layoutId, reason).inc(n);
  } });
}
