// The action ids a layout has finished, so a redelivered entry is acked instead of sent again.
//
// It used to be an LRU cache of the id strings (100,000 of them). Every finished id then lived
// long enough to be copied by the young generation's collector and promoted: while draining a
// backlog that was most of what each scavenge copied (about 1.8 MB a scavenge in bench -- bridge at
// 1,000 Hz), and the scavenges, 2 to 5 ms each, made ticks late. Here an id leaves nothing on the
// heap: it is reduced to a 63-bit fingerprint (cyrb53's two 32-bit lanes, public domain, by bryc)
// kept in two fixed open-addressing tables (linear probing) of `capacity` ids each. When the
// current table is full, the older one is cleared and becomes the current one, so the set
// remembers at least the last `capacity` ids and forgets an id after 2 × capacity newer ones.
// Two distinct ids share a fingerprint with a chance of about 1 in 2^63: with 200,000 remembered,
// one new action in some 4.6 × 10^13 would be taken for a duplicate.

/** The fingerprint of the last id hashed (two 32-bit lanes; lane b is never 0: 0/0 marks an empty slot). */
let a = 0;
let b = 0;

function fingerprint(id: string): void {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507);
  h1 ^= Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507);
  h2 ^= Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  a = h1 >>> 0;
  b = (h2 | 1) >>> 0;
}

export class SeenIds {
  /** slot i holds a fingerprint at [2i, 2i + 1] */
  private current: Uint32Array;
  private previous: Uint32Array;
  private inCurrent = 0;
  private readonly mask: number;

  constructor(private readonly capacity: number) {
    let slots = 2;
    while (slots < capacity * 2) slots *= 2; // at most half full: short probe runs
    this.mask = slots - 1;
    this.current = new Uint32Array(slots * 2);
    this.previous = new Uint32Array(slots * 2);
  }

  has(id: string): boolean {
    fingerprint(id);
    return this.find(this.current) || this.find(this.previous);
  }

  add(id: string): void {
    fingerprint(id);
    if (this.find(this.current)) return;
    if (this.inCurrent === this.capacity) {
      const cleared = this.previous.fill(0);
      this.previous = this.current;
      this.current = cleared;
      this.inCurrent = 0;
    }
    let i = a & this.mask;
    while (this.current[2 * i + 1] !== 0) i = (i + 1) & this.mask;
    this.current[2 * i] = a;
    this.current[2 * i + 1] = b;
    this.inCurrent++;
  }

  /** Whether the table holds the fingerprint last computed. */
  private find(table: Uint32Array): boolean {
    for (let i = a & this.mask; ; i = (i + 1) & this.mask) {
      const lane = table[2 * i + 1];
      if (lane === 0) return false;
      if (lane === b && table[2 * i] === a) return true;
    }
  }
}
