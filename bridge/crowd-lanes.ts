// A layout's crowd as its targets get it: the gateways' summaries merged (CrowdOutbox), the leases
// that end a silent process's share, and on each tick every target's changed values and fired cues
// in one bundle. Summaries and cues also reach the layout's DMX universes.
import type { CrowdSummary } from '../schemas/aggregate.js';
import type { CrowdValue } from '../schemas/crowd-merge.js';
import type { AckQueue } from './ack-queue.js';
import type { LayoutCounters } from './counters.js';
import { crowdDatagrams } from './crowd.js';
import { CrowdOutbox } from './crowd-outbox.js';
import type { DmxLane } from './dmx/dmx-lane.js';
import type { OscArg } from './osc.js';
import { timetag } from './osc.js';
import { MAX_DATAGRAM_BYTES, type TargetLane, type TargetLanes } from './target-lanes.js';

export class CrowdLanes {
  /** the merged values and the cues owed to each target */
  private readonly outbox: CrowdOutbox;
  /** how far the crowd's leases may run (heard()); null: no read yet, they run with the clock */
  private leasesRunUntil: number | null = null;

  constructor(
    private readonly lanes: TargetLanes,
    private readonly dmx: () => readonly DmxLane[],
    private readonly acks: AckQueue,
    private readonly c: LayoutCounters,
    private readonly playoutDelayMs: number,
    private readonly now: () => number,
    private readonly toLocal: (ms: number) => number,
  ) {
    this.outbox = new CrowdOutbox(lanes.all.length);
  }

  /**
   * The stream told this bridge what the gateways wrote up to `at` (Redis's clock), and a read
   * comes back within `graceMs` while all is well: the crowd's leases run until `at + graceMs` and
   * no further. A bridge that cannot read (its link cut, the layout's master failing over) learns
   * nothing of the gateways, so their silence then ends no lease; nor while it catches up on
   * entries written meanwhile.
   */
  heard(at: number, graceMs: number): void {
    this.leasesRunUntil = Math.max(this.leasesRunUntil ?? -Infinity, at + graceMs);
  }

  /** Takes a crowd summary (acked with the next tick: it is state, not a message to deliver). */
  offerSummary(streamId: string, summary: CrowdSummary): void {
    this.outbox.offer(summary);
    for (const u of this.dmx()) u.summary(summary.lid);
    this.c.summaries++;
    this.acks.add(streamId);
  }

  /** The layout's merged crowd values now (what the displays were last sent). */
  crowdValues(): CrowdValue[] {
    return this.outbox.values();
  }

  /** A crowd cue fired: to every target with the next tick (kept for a target that is backing off). */
  sendCue(lid: number, address: string, value: number): void {
    this.outbox.cue({ lid, address, value });
    for (const u of this.dmx()) u.cue(lid);
  }

  /** A tick begins: the values changed (or whose leases ran out) become owed, and the universes take the values now. */
  collect(): void {
    this.outbox.collect(Math.min(this.now(), this.leasesRunUntil ?? Infinity));
    const universes = this.dmx();
    if (universes.length === 0) return;
    const values = this.outbox.values();
    for (const u of universes) u.crowd(values);
  }

  /** Sends target `i` the crowd values changed and the cues fired, in one bundle (one per control if they do not fit a datagram); returns what it sent. */
  async send(lane: TargetLane, i: number): Promise<readonly { address: string; args: readonly OscArg[] }[] | null> {
    if (!lane.target.ready()) return null;
    const owed = this.outbox.take(i);
    if (!owed) return null;
    const perValue = this.lanes.counted(lane, () => lane.router.owed(owed));
    if (perValue.length === 0) return null;
    try {
      const { datagrams, messages } = crowdDatagrams(perValue, timetag(this.playoutDelayMs > 0 ? this.toLocal(this.now()) + this.playoutDelayMs : null), MAX_DATAGRAM_BYTES);
      await this.lanes.transmit(lane, datagrams, messages, datagrams.length);
    } catch (e) {
      this.outbox.putBack(i, owed); // sent again when the target is back
      this.lanes.sendFailed(lane, (e as Error).message);
      return null;
    }
    return perValue.flat();
  }
}
