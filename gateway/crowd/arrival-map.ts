// Participants by when their latest value came, for a window that drops them as they age out. Most
// arrive now and are appended, so the map stays oldest first and expiry stops at the first one still
// young. A value handed over from another process (a participant that moved here) arrived earlier:
// it waits in a small side map that is scanned only once its oldest entry is due.

export interface Arrived {
  at: number;
}

export class ArrivalMap<V extends Arrived> {
  /** oldest first: each set moves its participant to the end */
  private readonly inOrder = new Map<string, V>();
  /** values that came earlier than the newest in order (handed over), and when the first of them is due */
  private readonly early = new Map<string, V>();
  private earlyDue = Infinity;
  /** the latest arrival appended in order: a value that came before it goes to `early` */
  private lastAt = -Infinity;

  get size(): number {
    return this.inOrder.size + this.early.size;
  }

  get(sub: string): V | undefined {
    return this.inOrder.get(sub) ?? this.early.get(sub);
  }

  /** Takes the participant out, returning what it held. */
  take(sub: string): V | undefined {
    const v = this.inOrder.get(sub);
    if (v !== undefined) {
      this.inOrder.delete(sub);
      return v;
    }
    const e = this.early.get(sub);
    if (e !== undefined) this.early.delete(sub);
    return e;
  }

  /** Holds a value that came now (after every other): at the end. */
  append(sub: string, v: V): void {
    this.take(sub);
    this.inOrder.set(sub, v);
    this.lastAt = Math.max(this.lastAt, v.at);
  }

  /** Holds a value that came at `v.at`, possibly before others held (a hand-over). */
  place(sub: string, v: V, windowMs: number): void {
    if (this.inOrder.size === 0) this.lastAt = -Infinity;
    if (v.at >= this.lastAt) return this.append(sub, v);
    this.take(sub);
    this.early.set(sub, v);
    this.earlyDue = Math.min(this.earlyDue, v.at + windowMs);
  }

  /** The participant held longest (the first in order), taken out; undefined when none. */
  takeOldest(): [string, V] | undefined {
    for (const entry of this.inOrder) {
      this.inOrder.delete(entry[0]);
      return entry;
    }
    for (const entry of this.early) {
      this.early.delete(entry[0]);
      return entry;
    }
    return undefined;
  }

  /** Takes out every participant `gone` says goes (a revoked token), whenever its value came, telling `taken` of each. */
  takeWhere(gone: (sub: string, v: V) => boolean, taken: (sub: string, v: V) => void): void {
    for (const map of [this.inOrder, this.early]) {
      for (const [sub, v] of map) {
        if (!gone(sub, v)) continue;
        map.delete(sub);
        taken(sub, v);
      }
    }
  }

  /** Takes out every value that came at or before `from`, telling `gone` of each. */
  expire(from: number, windowMs: number, gone: (sub: string, v: V) => void): void {
    for (const [sub, v] of this.inOrder) {
      if (v.at > from) break;
      this.inOrder.delete(sub);
      gone(sub, v);
    }
    if (from + windowMs < this.earlyDue) return;
    this.earlyDue = Infinity;
    for (const [sub, v] of this.early) {
      if (v.at <= from) {
        this.early.delete(sub);
        gone(sub, v);
      } else this.earlyDue = Math.min(this.earlyDue, v.at + windowMs);
    }
  }
}
