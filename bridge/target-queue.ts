// What one display target still has to be sent, in stream order. Continuous controls (Slider,
// XYPad) are coalesced: a newer value of the same control supersedes an older unsent one, and
// takes its place at the end. Discrete controls (Button, Toggle, Index, String) are never
// coalesced, dropped (other than by age) or reordered.
import type { ActionEntry, ControlType } from '../schemas/types.js';

const CONTINUOUS: ReadonlySet<ControlType> = new Set(['Slider', 'XYPad']);

/** One stream entry on its way to every target of its layout. */
export interface Delivery {
  streamId: string;
  entry: ActionEntry;
  /** targets that have not yet sent (or dropped) it; the entry is acked at 0 */
  remaining: number;
  /** further stream ids carrying the same action id, acked with this one */
  alsoAck: string[];
  /** the best outcome among the targets done with it so far: sent, else coalesced, else stale */
  outcome?: 'sent' | 'coalesced' | 'stale';
}

interface Slot {
  d: Delivery;
  superseded: boolean;
}

export interface Taken {
  /** to send now, in order */
  send: Delivery[];
  /** handled without sending: superseded by a newer value (coalesced) */
  coalesced: Delivery[];
}

export class TargetQueue {
  private slots: Slot[] = [];
  private readonly latest = new Map<number, Slot>();

  get length(): number {
    return this.slots.length;
  }

  /** Appends a delivery; returns the one it superseded, if any. */
  push(d: Delivery): Delivery | null {
    const slot: Slot = { d, superseded: false };
    let superseded: Delivery | null = null;
    if (CONTINUOUS.has(d.entry.type)) {
      const prev = this.latest.get(d.entry.lid);
      if (prev && !prev.superseded) {
        prev.superseded = true;
        superseded = prev.d;
      }
      this.latest.set(d.entry.lid, slot);
    }
    this.slots.push(slot);
    return superseded;
  }

  /** Removes up to `max` sendable deliveries from the front (superseded ones come out as `coalesced`). */
  take(max: number): Taken {
    const send: Delivery[] = [];
    const coalesced: Delivery[] = [];
    let i = 0;
    for (; i < this.slots.length && send.length < max; i++) {
      const s = this.slots[i]!;
      if (s.superseded) {
        coalesced.push(s.d);
        continue;
      }
      send.push(s.d);
      if (this.latest.get(s.d.entry.lid) === s) this.latest.delete(s.d.entry.lid);
    }
    this.slots = this.slots.slice(i);
    return { send, coalesced };
  }

  /** Puts deliveries that could not be sent back at the front, in their order (a newer queued value still wins). */
  requeue(ds: Delivery[]): void {
    const back: Slot[] = [];
    for (let i = ds.length - 1; i >= 0; i--) {
      const d = ds[i]!;
      const slot: Slot = { d, superseded: false };
      if (CONTINUOUS.has(d.entry.type)) {
        if (this.latest.has(d.entry.lid)) slot.superseded = true;
        else this.latest.set(d.entry.lid, slot);
      }
      back.unshift(slot);
    }
    this.slots = [...back, ...this.slots];
  }
}
