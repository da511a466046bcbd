// What a layout owes each of its targets of the crowd: the merged values that changed since the
// target's last send, and the cues fired. A target that is backing off keeps what it is owed, so it
// gets the newest value of each control (and every cue) when it is back.
import type { CrowdSummary } from '../schemas/aggregate.js';
import { CrowdTable, type CrowdValue } from '../schemas/crowd-merge.js';

/** A crowd cue that fired: its control, the control's address, and the value. */
export interface FiredCue {
  lid: number;
  address: string;
  value: number;
}

export interface Owed {
  values: CrowdValue[];
  cues: FiredCue[];
}

export class CrowdOutbox {
  /** the newest summary of each gateway process, per aggregated control */
  private readonly table = new CrowdTable();
  /** per target: values by lid, and cues in the order they fired */
  private readonly owed: { values: Map<number, CrowdValue>; cues: FiredCue[] }[];

  constructor(targets: number) {
    this.owed = Array.from({ length: targets }, () => ({ values: new Map(), cues: [] }));
  }

  offer(summary: CrowdSummary): void {
    this.table.offer(summary);
  }

  /** The layout's merged crowd values now (what the displays were last sent). */
  values(): CrowdValue[] {
    return this.table.current();
  }

  /** The values that changed (or ran out) since the last call become owed to every target. */
  collect(now: number): void {
    if (this.table.size > 0) for (const v of this.table.changed(now)) for (const o of this.owed) o.values.set(v.lid, v);
  }

  /** A cue fired: it is owed to every target (each sends it as its routes say). */
  cue(fired: FiredCue): void {
    for (const o of this.owed) o.cues.push(fired);
  }

  /** What target `i` is owed, taken out (null: nothing). */
  take(i: number): Owed | null {
    const o = this.owed[i]!;
    if (o.values.size === 0 && o.cues.length === 0) return null;
    const taken = { values: [...o.values.values()], cues: o.cues };
    o.values.clear();
    o.cues = [];
    return taken;
  }

  /** A send to target `i` failed: what it took is owed again (a newer value of the same control wins). */
  putBack(i: number, taken: Owed): void {
    const o = this.owed[i]!;
    for (const v of taken.values) if (!o.values.has(v.lid)) o.values.set(v.lid, v);
    o.cues.unshift(...taken.cues);
  }
}
