// What becomes of each entry a layout's reader gets, settled on its own; nothing it holds can stop
// the reader's loop:
// - data trimmed or deleted while pending (nil fields): acked, counted as lost, logged with its id;
// - cannot be decoded, validated or encoded: copied to the dead-letter stream with the reason, acked;
// - older than maxAgeMs: dropped as stale, acked; more than maxAgeMs in the future: dead-lettered;
// - otherwise: handed to the scheduler (an action) or its crowd (a summary), which ack it.
import type { Logger } from '../runtime/log.js';
import { decodeStreamEntry } from '../schemas/action-entry.js';
import type { BridgeCounters, LayoutCounters } from './counters.js';
import type { DeadEntry, DeadLetters } from './dead-letters.js';
import type { LostEntries } from './lost-entries.js';
import type { LayoutScheduler } from './scheduler.js';

/** An entry as XREADGROUP and XAUTOCLAIM return it: fields are nil when its data is gone. */
export type RawEntry = [string, string[] | null];

/** What the reader decided for one entry: `stale` is a crowd summary past its window; `settled`, an action the scheduler counted and acks itself (too old to send). */
type Verdict = { kind: 'offered'; ts: number } | { kind: 'stale' } | { kind: 'settled' } | { kind: 'dead'; reason: string };

export class EntrySettler {
  private readonly layoutId: string;
  private readonly c: LayoutCounters;

  constructor(
    private readonly scheduler: LayoutScheduler,
    private readonly counters: BridgeCounters,
    private readonly losses: LostEntries,
    private readonly deadLetters: DeadLetters,
    private readonly log: Logger,
    private readonly now: () => number,
  ) {
    this.layoutId = scheduler.settings.layoutId;
    this.c = counters.layout(this.layoutId);
  }

  /**
   * Settles each entry on its own. Good entries are offered to the scheduler at once; the unusable
   * ones are then copied to the dead-letter stream in one pipeline, so they never hold up the good
   * ones. `read` is counted with each entry's outcome, so a failure half-way (the pipeline, say)
   * leaves the counters adding up, and what was not settled is read again.
   */
  async handle(entries: RawEntry[]): Promise<void> {
    const now = this.now();
    const trimmed: string[] = [];
    const dead: DeadEntry[] = [];
    let newest = this.counters.newestRead.get(this.layoutId) ?? 0;
    for (let i = 0; i < entries.length; i++) {
      // Sending on time wins over reading: once a tick is due, it runs before the next entry.
      if (this.scheduler.clock.due()) await this.scheduler.clock.afterNext();
      const [id, fields] = entries[i]!;
      if (this.scheduler.holds(id)) continue; // read again after an outage: already on its way
      if (fields === null) {
        trimmed.push(id);
        continue;
      }
      let verdict: Verdict;
      try {
        verdict = this.settle(id, fields, now);
      } catch (e) {
        // a bug, not the entry's fault alone: still this entry's problem only, never the loop's
        verdict = { kind: 'dead', reason: `the bridge could not handle it: ${(e as Error).message}` };
        this.log.error({ layoutId: this.layoutId, streamId: id, err: e }, 'unexpected error while handling an entry');
      }
      if (verdict.kind === 'dead') {
        dead.push({ id, fields, reason: verdict.reason });
        continue;
      }
      if (verdict.kind === 'stale') {
        this.c.droppedStale++;
        this.scheduler.ackLater(id);
      } else if (verdict.kind === 'offered') newest = Math.max(newest, verdict.ts);
      this.c.read++;
    }
    if (newest > 0) this.counters.newestRead.set(this.layoutId, newest);
    this.losses.found(trimmed);
    for (const id of trimmed) this.scheduler.ackLater(id);
    if (dead.length > 0) {
      await this.deadLetters.write(dead);
      for (const { id } of dead) this.scheduler.ackLater(id);
    }
  }

  /** What to do with one entry (synchronous: it only decides, and offers a good entry to the scheduler). */
  private settle(id: string, fields: readonly string[], now: number): Verdict {
    const { maxAgeMs } = this.scheduler.settings;
    const decoded = decodeStreamEntry(fields);
    if (!decoded.ok) return { kind: 'dead', reason: decoded.reason };
    // The same checks for an action and a crowd summary: whose layout, and a clock in step.
    const item = 'summary' in decoded ? decoded.summary : decoded.entry;
    if (item.layoutId !== this.layoutId) return { kind: 'dead', reason: `${'summary' in decoded ? 'summary' : 'entry'} is for layout "${item.layoutId}"` };
    if (item.ts - now > maxAgeMs) return { kind: 'dead', reason: `ts is ${item.ts - now} ms in the future (more than maxAgeMs ${maxAgeMs}; are the clocks in step?)` };
    if ('summary' in decoded) {
      const s = decoded.summary;
      if (s.ts + s.windowMs <= now) return { kind: 'stale' }; // everything in it has left its window
      this.scheduler.crowd.offerSummary(id, s);
      return { kind: 'offered', ts: s.ts };
    }
    const { entry } = decoded;
    if (now - entry.ts > maxAgeMs) {
      this.scheduler.dropStale(id, entry);
      return { kind: 'settled' };
    }
    const offered = this.scheduler.offer(id, entry);
    if (offered.kind === 'unencodable') return { kind: 'dead', reason: offered.reason };
    return { kind: 'offered', ts: entry.ts };
  }
}
