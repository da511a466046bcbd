// The count check of a rehearsal (--display): the run knows what each simulated phone last sent to
// each aggregated control and when it was stored (its ack), so it knows the crowd value and `n` the
// displays should show: the figure over the phones whose latest value is still in the control's
// window (for `rate`, the presses in the window over the phones that pressed). At the end of the
// run it sets that beside what the display watcher last received at the control's address and at
// `<address>/n`: a double-counted participant, a lost one or a wrong merge shows as a mismatch,
// counted in `crowd_mismatch` (a threshold can fail the run on it) and listed control by control.
// During the run it samples each control's `n` as shown beside the range the phones' stored actions
// gave it over the last CROWD_SAMPLE_LAG_MS (what is stored reaches the display that much later at
// most): a sample outside it counts in `crowd_samples_off`, so a double count while phones move is
// seen when it happens, not only at the end. An action sent and not yet answered may be stored and
// shown before its ack comes back (a loaded phone's ack can trail the display): the range's top
// counts its phone too.

/** An aggregated control as discovery and page frames give it. */
export interface CheckedControl {
  lid: number;
  address: string;
  type: string;
  options?: { index: number }[];
  aggregate?: { mode: string; windowMs?: number };
}

/** How long each mode's value counts when the control names no window (schemas/aggregate.ts). */
const WINDOW_DEFAULTS: Record<string, number> = { rate: 1000, mean: 5000, median: 5000, 'trimmed-mean': 5000, centroid: 5000, fraction: 10_000, votes: 60_000 };
/** How far a shown value may be from the expected one: the median and trimmed mean are read from 0.01 bins; the rest are float32 on the wire. */
const TOLERANCE: Record<string, number> = { median: 0.011, 'trimmed-mean': 0.011, rate: 0.05 };
/** A phone's presses of one Button that count in one second, at most (the gateway's PRESSES_PER_SECOND_MAX): the run's clock and the gateway's split seconds apart a little, so `rate` is compared within 5 %. */
const PRESSES_PER_SECOND_MAX = 10;
const FLOAT_TOLERANCE = 1e-3;

/** How long a value of the control counts: its window, or its mode's default. */
function windowOf(control: CheckedControl): number {
  return control.aggregate!.windowMs ?? WINDOW_DEFAULTS[control.aggregate!.mode] ?? 5000;
}

export interface CrowdCheckRow {
  lid: number;
  address: string;
  mode: string;
  expected: { value: number[]; n: number };
  /** null: nothing arrived at the address */
  shown: { value: number[]; n: number | null } | null;
  match: boolean;
}

/** How far behind the stored actions the display may be: a fold tick, the bridge's read and tick, the network. */
export const CROWD_SAMPLE_LAG_MS = 1000;

/** One sample of one control: the `n` shown at `at` (Unix ms) and the least and most the stored actions gave over the lag before it. */
export interface CrowdSample {
  at: number;
  lid: number;
  /** null: nothing arrived at `<address>/n` yet */
  shown: number | null;
  expected: [number, number];
}

interface Latest {
  value: unknown;
  /** its ack (run clock) */
  at: number;
  /** its first send: the gateway stored it at some moment from then to `at` */
  sentAt: number;
}

export class CrowdCheck {
  /** by lid: each phone's latest stored value (a Button: its last press) */
  private readonly latest = new Map<number, Map<number, Latest>>();
  /** by lid: the stored presses of a Button that count (at most PRESSES_PER_SECOND_MAX of a phone in a second), oldest first */
  private readonly presses = new Map<number, number[]>();
  /** by lid and phone: the second of its last counted press, and how many counted in it */
  private readonly pressSeconds = new Map<number, Map<number, [number, number]>>();

  /** by lid: the phones with an action on it sent and not yet answered (it may be stored and shown already) */
  private readonly unanswered = new Map<number, Set<number>>();

  /** by lid: the expected n at each sample within the lag, and the most it may be with the unanswered actions stored, oldest first */
  private readonly recent = new Map<number, { now: number; n: number; most: number }[]>();

  /**
   * Samples every aggregated control at `now` (the run's clock; `at` is the wall clock the sample
   * carries): the `n` shown beside the range expected over the lag. Returns the samples.
   */
  sample(controls: readonly CheckedControl[], now: number, at: number, shownN: (address: string) => number | null): CrowdSample[] {
    return controls
      .filter((c) => c.aggregate)
      .map((c) => {
        let ring = this.recent.get(c.lid);
        if (!ring) this.recent.set(c.lid, (ring = []));
        ring.push({ now, n: this.expected(c, now).n, most: this.mostN(c, now) });
        while (ring.length > 1 && ring[0]!.now < now - CROWD_SAMPLE_LAG_MS) ring.shift();
        return { at, lid: c.lid, shown: shownN(`${c.address}/n`), expected: [Math.min(...ring.map((r) => r.n)), Math.max(...ring.map((r) => r.most))] };
      });
  }

  /** A phone sent an action on an aggregated control (its first send; resends keep its key). */
  sent(phone: number, control: CheckedControl): void {
    if (!control.aggregate) return;
    let phones = this.unanswered.get(control.lid);
    if (!phones) this.unanswered.set(control.lid, (phones = new Set<number>()));
    phones.add(phone);
  }

  /** A phone's action on an aggregated control was refused, or the run gave up on it. */
  refused(phone: number, control: CheckedControl): void {
    this.unanswered.get(control.lid)?.delete(phone);
  }

  /** A phone's action on an aggregated control, first sent at `sentAt`, was stored at `at` (its ack). */
  stored(phone: number, control: CheckedControl, value: unknown, at: number, sentAt = at): void {
    if (!control.aggregate) return;
    this.unanswered.get(control.lid)?.delete(phone);
    let byPhone = this.latest.get(control.lid);
    if (!byPhone) this.latest.set(control.lid, (byPhone = new Map<number, Latest>()));
    byPhone.delete(phone); // oldest first
    byPhone.set(phone, { value, at, sentAt });
    if (control.aggregate.mode === 'rate') {
      let seconds = this.pressSeconds.get(control.lid);
      if (!seconds) this.pressSeconds.set(control.lid, (seconds = new Map<number, [number, number]>()));
      const second = Math.floor(at / 1000);
      const [was, inIt] = seconds.get(phone) ?? [second, 0];
      const counted = was === second ? inIt : 0;
      if (counted >= PRESSES_PER_SECOND_MAX) return; // the gateway answers it, and does not count it
      seconds.set(phone, [second, counted + 1]);
      let p = this.presses.get(control.lid);
      if (!p) this.presses.set(control.lid, (p = []));
      p.push(at);
    }
  }

  /**
   * Until when the control's figure at `now` is uncertain: a value leaves the gateway's window at
   * its storing plus the window, a moment the run knows only to lie between its send and its ack,
   * and the display shows it up to CROWD_SAMPLE_LAG_MS later. `now` itself when no value is in
   * that band: a mismatch then is real.
   */
  unsettledUntil(control: CheckedControl, now: number): number {
    const windowMs = windowOf(control);
    let until = now;
    for (const l of this.latest.get(control.lid)?.values() ?? []) {
      const end = l.at + windowMs + CROWD_SAMPLE_LAG_MS;
      if (l.sentAt + windowMs <= now && now < end) until = Math.max(until, end);
    }
    return until;
  }

  /** The most `n` may be at `now`: the phones counted, and those whose unanswered action may be stored already. */
  private mostN(control: CheckedControl, now: number): number {
    const from = now - windowOf(control);
    const counted = [...(this.latest.get(control.lid) ?? [])].filter(([, l]) => l.at > from).map(([phone]) => phone);
    return new Set([...counted, ...(this.unanswered.get(control.lid) ?? [])]).size;
  }

  /** What the display should show for the control at `now`. */
  expected(control: CheckedControl, now: number): { value: number[]; n: number } {
    const mode = control.aggregate!.mode;
    const windowMs = windowOf(control);
    const from = now - windowMs;
    const values = [...(this.latest.get(control.lid)?.values() ?? [])].filter((l) => l.at > from).map((l) => l.value);
    const n = values.length;
    const numbers = values as number[];
    const mean = (xs: number[]) => (xs.length === 0 ? 0 : xs.reduce((s, x) => s + x, 0) / xs.length);
    switch (mode) {
      case 'rate': {
        const presses = (this.presses.get(control.lid) ?? []).filter((at) => at > from).length;
        return { value: [presses / (windowMs / 1000)], n };
      }
      case 'fraction':
        return { value: [n === 0 ? 0 : values.filter((v) => v === true).length / n], n };
      case 'votes': // one count per option, by option index, as the wire carries them
        return { value: Array.from({ length: control.options?.length ?? 0 }, (_, index) => numbers.filter((v) => v === index).length), n };
      case 'centroid': {
        const pairs = values as [number, number][];
        return { value: [mean(pairs.map((p) => p[0])), mean(pairs.map((p) => p[1]))], n };
      }
      case 'median': {
        const sorted = [...numbers].sort((a, b) => a - b);
        return { value: [n === 0 ? 0 : n % 2 === 1 ? sorted[(n - 1) / 2]! : (sorted[n / 2 - 1]! + sorted[n / 2]!) / 2], n };
      }
      case 'trimmed-mean': {
        const cut = Math.floor(n * 0.1);
        return { value: [mean([...numbers].sort((a, b) => a - b).slice(cut, n - cut))], n };
      }
      default:
        return { value: [mean(numbers)], n };
    }
  }

  /** The rows of the check at `now`: each aggregated control's expected figure beside what `shown(address)` says arrived. */
  rows(controls: readonly CheckedControl[], now: number, shown: (address: string) => number[] | null): CrowdCheckRow[] {
    return controls
      .filter((c) => c.aggregate)
      .map((c) => {
        const mode = c.aggregate!.mode;
        const expected = this.expected(c, now);
        const value = shown(c.address);
        const n = shown(`${c.address}/n`)?.[0] ?? null;
        const tolerance = TOLERANCE[mode] ?? FLOAT_TOLERANCE;
        const valueMatches = value !== null && value.length === expected.value.length && value.every((v, i) => Math.abs(v - expected.value[i]!) <= (mode === 'votes' ? 0 : tolerance * Math.max(1, Math.abs(expected.value[i]!))));
        // nothing arrived is right for a control nobody touched
        const match = value === null ? expected.n === 0 : n === expected.n && valueMatches;
        return { lid: c.lid, address: c.address, mode, expected, shown: value === null ? null : { value, n }, match };
      });
  }
}
