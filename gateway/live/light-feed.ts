// The looks of a layout's light canvas for the live channel. While this process holds sockets on a
// layout with a canvas, it reads the layout's light stream (schemas/redis-keys.ts lightStreamKey)
// on a connection of its own with a blocking XREAD, and keeps each zone's current look: a socket
// that opens, reconnects or catches up gets it at once, and each new one is handed to the live
// channel as it comes (one publish per zone). A look starts at its entry's id (when Redis took it,
// the deployment's timebase) plus the canvas's lightLeadMs, so it reaches the phones that far ahead
// and they all start it together. Looks read in one batch (a backlog after Redis was away) are
// folded: only each zone's newest goes out. An entry that is no look for this canvas is counted and
// skipped; a Redis error is counted and the read tried again, from the last entry read.
import type { RedisClient } from '../../runtime/redis.js';
import { EVERY_ZONE, lookStartsAt, zoneOnCanvas, type LightCanvas, type LightLook } from '../../schemas/light.js';
import { validateLightLook } from '../../schemas/validators.js';
import type { RedisKeys } from '../store/keys.js';
import { lightFrame } from './frames.js';

/** How long one XREAD waits for a look (the connection's command timeout is longer). */
export const LIGHT_BLOCK_MS = 2000;
/** A failed read or connect is tried again this much later. */
const RETRY_MS = 250;
/** Looks read back from the stream's end to find each zone's current one, at most. */
const SCENE_SCAN = 1000;
/** Looks one XREAD returns at most. */
const READ_COUNT = 256;

/** Where the looks go: the live channel, once it follows the feed. */
export interface LightSink {
  /** whether sockets of the layout are still held here (a watch that waited for the canvas may come after the last one left) */
  holds(layoutId: string): boolean;
  /** a zone's new look (zone * for every zone), as its frame's text */
  lightLook(layoutId: string, zone: string, text: string): void;
}

export interface LightFeedOptions {
  /** a connection of its own for one layout's blocking reads */
  connect: () => Promise<RedisClient>;
  /** the layout's canvas now (null: none, or the layout is gone) */
  canvas: (layoutId: string) => Promise<LightCanvas | null>;
  /** Redis away (a read or connect failed): counted */
  onUnavailable: (what: string) => void;
  /** an entry that is no look for this canvas (a bad look, a zone it does not light): counted, skipped */
  onUnusable: (reason: string) => void;
}

/** XREAD's answer for one stream: its entries, each [id, fields]; null when none came in the block. */
type StreamReply = [string, [string, string[]][]][] | null;

interface Reader {
  layoutId: string;
  /** each zone's current look (zone * for the layout's look, older than every zone's own) */
  scene: Map<string, { id: string; text: string }>;
  redis: RedisClient | null;
  running: boolean;
}

export class LightFeed {
  private readonly readers = new Map<string, Reader>();
  /** the live channel (none yet: nothing is held, so nothing is read) */
  private sink: LightSink | null = null;

  constructor(
    private readonly keys: RedisKeys,
    private readonly o: LightFeedOptions,
  ) {}

  /** The live channel follows the feed: it says which layouts it holds and gets their looks. */
  follow(sink: LightSink): void {
    this.sink = sink;
  }

  /**
   * A layout is held here (its first socket) or changed: its looks are read while it has a canvas.
   * Idempotent: a layout read already keeps its reader.
   */
  async watch(layoutId: string): Promise<void> {
    const canvas = await this.o.canvas(layoutId);
    if (!canvas) return this.unwatch(layoutId);
    if (this.readers.has(layoutId) || !this.sink?.holds(layoutId)) return;
    const reader: Reader = { layoutId, scene: new Map(), redis: null, running: true };
    this.readers.set(layoutId, reader);
    void this.run(reader);
  }

  /** Its last socket here left, or its canvas is gone: its looks are no longer read. */
  unwatch(layoutId: string): void {
    const reader = this.readers.get(layoutId);
    if (!reader) return;
    this.readers.delete(layoutId);
    reader.running = false;
    reader.redis?.disconnect();
  }

  /** The frames a socket of the zone gets when it opens or catches up: its zone's current look, else the layout's. */
  current(layoutId: string, zone: string): string[] {
    const scene = this.readers.get(layoutId)?.scene;
    const look = scene && ((zone !== '' && scene.get(zone)) || scene.get(EVERY_ZONE));
    return look ? [look.text] : [];
  }

  private async run(r: Reader): Promise<void> {
    const key = this.keys.lightStream(r.layoutId);
    let lastId: string | null = null;
    while (r.running) {
      try {
        r.redis ??= await this.o.connect();
        if (!r.running) break;
        if (lastId === null) lastId = await this.readScene(r, r.redis, key);
        const got: StreamReply = await r.redis.xread('COUNT', READ_COUNT, 'BLOCK', LIGHT_BLOCK_MS, 'STREAMS', key, lastId);
        const entries: [string, string[]][] = got?.[0]?.[1] ?? [];
        if (entries.length > 0 && r.running) {
          lastId = entries[entries.length - 1]![0];
          this.apply(r, entries, await this.o.canvas(r.layoutId));
        }
      } catch {
        if (!r.running) break;
        this.o.onUnavailable('live_light');
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS).unref());
      }
    }
    r.redis?.disconnect();
  }

  /** Each zone's current look, from the stream's end back (to the newest look for every zone, or SCENE_SCAN looks); the id to read on from. */
  private async readScene(r: Reader, redis: RedisClient, key: string): Promise<string> {
    const newest = (await redis.xrevrange(key, '+', '-', 'COUNT', SCENE_SCAN)) as [string, string[]][];
    const canvas = await this.o.canvas(r.layoutId);
    // back from the newest: a zone's look older than the layout's newest * look is replaced by it
    const cut = newest.findIndex(([, fields]) => lookOf(fields)?.zone === EVERY_ZONE);
    // sent too: a socket that opened before the scene was known got none with its page
    this.apply(r, (cut === -1 ? newest : newest.slice(0, cut + 1)).reverse(), canvas);
    return newest[0]?.[0] ?? '0-0';
  }

  /** Looks in stream order into the scene; each zone's newest of them goes out (a * first). */
  private apply(r: Reader, entries: [string, string[]][], canvas: LightCanvas | null): void {
    const changed = new Map<string, { id: string; text: string }>();
    for (const [id, fields] of entries) {
      const look = lookOf(fields);
      if (!look) this.o.onUnusable('light_look_invalid');
      else if (!canvas) this.o.onUnusable('light_no_canvas');
      else if (!zoneOnCanvas(canvas, look.zone)) this.o.onUnusable('light_zone_not_on_canvas');
      else {
        const frame = { id, text: lightFrame(id, lookStartsAt(id, canvas), look) };
        if (look.zone === EVERY_ZONE) {
          r.scene.clear();
          changed.clear();
        }
        r.scene.set(look.zone, frame);
        changed.delete(look.zone);
        changed.set(look.zone, frame); // in order: a * look goes out before the zones' looks after it
      }
    }
    for (const [zone, { text }] of changed) this.sink?.lightLook(r.layoutId, zone, text);
  }

  stop(): void {
    for (const layoutId of [...this.readers.keys()]) this.unwatch(layoutId);
  }
}

/** The look of a light stream entry (field `look`), or null for none that is valid. */
function lookOf(fields: string[]): LightLook | null {
  const at = fields.indexOf('look');
  if (at === -1 || at % 2 !== 0) return null;
  let look: unknown;
  try {
    look = JSON.parse(fields[at + 1] ?? '');
  } catch {
    return null;
  }
  return validateLightLook(look) ? look : null;
}
