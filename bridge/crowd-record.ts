// A layout's crowd values in its show record: once a second, each aggregated control's merged value
// that changed since this bridge last sent it goes to a Redis function (ac_sample_crowd_1, schemas/bridge-functions.lua) that records
// it if it differs from the value last recorded, by any bridge, and that one is at least a second
// old. A still crowd adds nothing; a Redis away loses those samples only (logged once a minute).
import type { CrowdValue } from '../schemas/crowd-merge.js';
import { showRecordKey, showRecordStateKey } from '../schemas/redis-keys.js';
import { RECORD_DEFAULTS, RECORD_SAMPLE_MS } from '../schemas/show-record.js';
import { callBridgeFunction } from './functions.js';
import type { Logger } from '../runtime/log.js';
import type { RedisClient } from '../runtime/redis.js';

/** The gate in Redis is a little shorter than the timer, so a timer that fires a little early still records. */
const GATE_MS = RECORD_SAMPLE_MS - 100;

export class CrowdRecord {
  /** what this bridge last sent per lid (its JSON) */
  private readonly sent = new Map<number, string>();
  private timer: NodeJS.Timeout | null = null;
  private busy = false;
  private lastErrorLog = -Infinity;
  private readonly keys: [string, string];

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
    private readonly layoutId: string,
    private readonly values: () => CrowdValue[],
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.keys = [showRecordKey(prefix, layoutId), showRecordStateKey(prefix, layoutId)];
  }

  start(): void {
    this.timer = setInterval(() => void this.sample(), RECORD_SAMPLE_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer ?? undefined);
  }

  async sample(): Promise<void> {
    if (this.busy) return;
    const changed: (string | number)[] = [];
    const next = new Map<number, string>();
    for (const v of this.values()) {
      const text = JSON.stringify({ value: v.value, n: v.n });
      if (this.sent.get(v.lid) !== text) {
        changed.push(v.lid, text);
        next.set(v.lid, text);
      }
    }
    if (changed.length === 0) return;
    this.busy = true;
    try {
      await callBridgeFunction(this.redis, 'sampleCrowd', this.keys, [GATE_MS, RECORD_DEFAULTS.retentionMs, RECORD_DEFAULTS.maxBytes, ...changed]);
      for (const [lid, text] of next) this.sent.set(lid, text);
    } catch (e) {
      const now = this.now();
      if (now - this.lastErrorLog >= 60_000) {
        this.lastErrorLog = now;
        this.log.warn({ layoutId: this.layoutId, err: (e as Error).message }, 'could not record crowd values in the show record (tried again next second)');
      }
    } finally {
      this.busy = false;
    }
  }
}
