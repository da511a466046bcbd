// Unusable stream entries (cannot be decoded, validated or encoded; for another layout; stamped far
// in the future) are copied to the layout's dead-letter stream with their reason, then counted. A
// copy Redis refuses (the dead-letter key holds another type, Redis is out of memory) is counted and
// logged, and the entry is settled anyway: a broken dead-letter stream must not stop the output.
// Only a lost connection (the whole pipeline fails) leaves them to be read again.
import type { RedisClient } from '../runtime/redis.js';
import type { Logger } from '../runtime/log.js';
import type { LayoutCounters } from './counters.js';

/** The dead-letter stream keeps this much of an unusable entry's fields as JSON (their full length is noted). */
const KEEP_CHARS = 4096;
const LOG_EVERY_MS = 5000;

export interface DeadEntry {
  id: string;
  fields: readonly string[];
  reason: string;
}

export class DeadLetters {
  private lastLog = 0;
  private unlogged = 0;

  constructor(
    private readonly ops: RedisClient,
    private readonly key: string,
    private readonly s: { maxLen: number; bridgeId: string },
    private readonly layoutId: string,
    private readonly c: LayoutCounters,
    private readonly log: Logger,
    private readonly now: () => number,
  ) {}

  /** Copies `dead` in one pipeline and counts each as read and dead-lettered (the caller acks them). */
  async write(dead: readonly DeadEntry[]): Promise<void> {
    const pipe = this.ops.pipeline();
    for (const { id, fields, reason } of dead) {
      const all = JSON.stringify(fields);
      pipe.xadd(this.key, 'MAXLEN', '~', this.s.maxLen, '*', 'streamId', id, 'reason', reason, 'bridgeId', this.s.bridgeId, 'fields', all.slice(0, KEEP_CHARS), 'fieldsChars', all.length);
    }
    const results = (await pipe.exec()) ?? [];
    for (const [i, { id }] of dead.entries()) {
      const err = results[i]?.[0];
      if (err) {
        this.c.deadLetterFailures++;
        this.log.error({ layoutId: this.layoutId, streamId: id, err: err.message }, 'could not copy an unusable entry to the dead-letter stream; acked without its copy');
      }
      this.c.read++;
      this.c.deadLettered++;
    }
    const now = this.now();
    if (now - this.lastLog >= LOG_EVERY_MS) {
      const first = dead[0]!;
      this.log.warn({ layoutId: this.layoutId, streamId: first.id, reason: first.reason, alsoSinceLastLog: this.unlogged + dead.length - 1 }, 'unusable stream entry; dead-lettered');
      this.lastLog = now;
      this.unlogged = 0;
    } else this.unlogged += dead.length;
  }
}
