// The gateway's crowd fold against a real Redis, at crowd sizes the HTTP test cannot afford: several
// folds (one per gateway process) each take their share of a seeded random crowd of 1 to 10,000
// participants; the bridge's merge of what they stored equals the figures computed offline. The
// stream holds summaries only, bounded by fold ticks x processes. Rerun with FUZZ_SEED=<seed>.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CrowdTable } from '../../schemas/crowd-merge.js';
import { ActionLog } from '../../gateway/actions/action-log.js';
import { CrowdFold, LARGE_SUMMARY_MS, LEASE_REFRESH_MS, PRESSES_PER_SECOND_MAX, type AggregatedControl, type CrowdFoldOptions } from '../../gateway/crowd/crowd-fold.js';
import { RedisKeys } from '../../gateway/store/keys.js';
import { CROWD_LEASE_MS, type CrowdSummary } from '../../schemas/aggregate.js';
import { decodeStreamEntry } from '../../schemas/action-entry.js';
import { CROWD_LAYOUT, CROWD_MODES, CROWD_WINDOW_MS, offlineCrowd, participantRounds, type CrowdAction } from '../helpers/crowd.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';
import { fuzzSeed, seededRandom } from '../helpers/seeded-random.js';

const redis = useRedis();
const seed = fuzzSeed();
const FOLD_MS = 10;
const controls = new Map(CROWD_LAYOUT.pages[0]!.controls.map((c) => [c.lid, c as AggregatedControl]));
let client: Redis;
beforeAll(() => {
  client = new Redis(redis.get().server.url);
});
afterAll(() => client.disconnect());

/** The summaries in a stream, decoded (and checked against the schema). */
async function summariesIn(keys: RedisKeys, layoutId: string): Promise<CrowdSummary[]> {
  return (await client.xrange(keys.actions(layoutId), '-', '+')).map(([id, fields]) => {
    const d = decodeStreamEntry(fields);
    if (!d.ok || !('summary' in d)) throw new Error(`entry ${id} is not a valid summary: ${JSON.stringify(d)}`);
    return d.summary;
  });
}

/** One fold (a gateway process) writing to a fresh prefix; `run` gets it and the summaries it stored, and the fold is stopped after. */
async function withFold(source: string, run: (fold: CrowdFold, stored: () => Promise<CrowdSummary[]>) => Promise<void>, options: CrowdFoldOptions = {}): Promise<void> {
  const keys = new RedisKeys(randomPrefix());
  const fold = new CrowdFold(new ActionLog(client, keys, { maxLen: 1000, retentionMs: 600_000 }), source, FOLD_MS, options);
  try {
    await run(fold, () => summariesIn(keys, 'show'));
  } finally {
    fold.stop();
  }
}

describe(`crowd fold (seed ${seed})`, () => {
  const random = seededRandom(seed);
  const sizes = [1, 10_000, 2 + Math.floor(random() * 500), 2 + Math.floor(random() * 9_998)];

  it.each(sizes)('folds a crowd of %i over several gateway processes into summaries whose merge equals the offline figures', async (participants) => {
    const keys = new RedisKeys(randomPrefix());
    const layoutId = CROWD_LAYOUT.layoutId;
    const processes = 2 + Math.floor(random() * 3);
    const folds = Array.from({ length: processes }, (_, g) => new CrowdFold(new ActionLog(client, keys, { maxLen: 1_000_000, retentionMs: 600_000 }), `gw-${g}`, FOLD_MS));
    try {
      const actions: CrowdAction[] = [];
      const started = performance.now();
      const pending: Promise<void>[] = [];
      const zoneOf: string[] = [];
      for (let p = 0; p < participants; p++) {
        const fold = folds[p % processes]!; // one participant, one gateway process: counted once
        zoneOf[p] = ['', 'left', 'right', 'pit'][Math.floor(random() * 4)]!; // '' for no zone
        for (const round of participantRounds(random, p)) {
          actions.push(...round);
          for (const a of round) pending.push(fold.add(layoutId, controls.get(a.lid)!, `sub-${p}`, a.value as never, Date.now(), zoneOf[p]));
        }
      }
      await Promise.all(pending);
      const ticks = Math.ceil((performance.now() - started) / FOLD_MS) + 1;
      const summaries = await summariesIn(keys, layoutId);
      // bounded load: at most one summary per control, fold tick and process, however many actions
      expect(summaries.length).toBeLessThanOrEqual(ticks * processes * Object.keys(CROWD_MODES).length);
      expect(summaries.length).toBeLessThan(Math.max(actions.length, Object.keys(CROWD_MODES).length * processes + 1));
      const expected = offlineCrowd(actions, CROWD_MODES, CROWD_WINDOW_MS, { 4: 3 });
      // merged as the bridge merges them: the newest summary of each source
      const table = new CrowdTable();
      for (const s of summaries) table.offer(s);
      const merged = new Map(table.changed(Date.now()).map((v) => [v.lid, v]));
      for (const [address, e] of Object.entries(expected)) {
        const v = merged.get(Number(address.slice(1)))!;
        const tolerance = e.mode === 'median' || e.mode === 'trimmed-mean' ? 0.01 : 1e-9;
        expect(v.n, `${address} ${e.mode} n`).toBe(e.n);
        e.value.forEach((x, k) => expect(Math.abs(v.value[k]! - x), `${address} ${e.mode}[${k}]: merged ${v.value[k]}, offline ${x}`).toBeLessThanOrEqual(tolerance));
        if (e.sd !== undefined) expect(Math.abs(v.sd! - e.sd), `${address} sd`).toBeLessThanOrEqual(1e-9);
      }
      // each zone: the same figures over its own participants; a zone with nobody is left out
      for (const zone of ['left', 'right', 'pit']) {
        const inZone = offlineCrowd(actions.filter((a) => zoneOf[a.participant] === zone), CROWD_MODES, CROWD_WINDOW_MS, { 4: 3 });
        for (const [address, e] of Object.entries(inZone)) {
          const z = merged.get(Number(address.slice(1)))!.zones?.[zone];
          expect(z?.n, `${address} ${e.mode} zone ${zone} n`).toBe(e.n);
          const tolerance = e.mode === 'median' || e.mode === 'trimmed-mean' ? 0.01 : 1e-9;
          e.value.forEach((x, k) => expect(Math.abs(z!.value[k]! - x), `${address} ${e.mode} zone ${zone} [${k}]`).toBeLessThanOrEqual(tolerance));
        }
        for (const v of merged.values()) if (!Object.values(inZone).some((e) => e.mode === v.mode)) expect(v.zones?.[zone], `lid ${v.lid} zone ${zone}`).toBeUndefined();
      }
    } finally {
      for (const f of folds) f.stop();
    }
  }, 60_000);

  it('starts a window again when a re-import changes the control, and still answers the actions that waited for the old one', async () => {
    await withFold('gw-reimport', async (fold, stored) => {
      const asMean = { ...controls.get(2)!, aggregate: { mode: 'mean' as const, windowMs: 60_000 } };
      const asMedian = { ...asMean, aggregate: { mode: 'median' as const, windowMs: 60_000 } };
      const before = fold.add('show', asMean, 'sub-1', 0.2, Date.now());
      const after = fold.add('show', asMedian, 'sub-2', 0.8, Date.now()); // the same turn: no fold tick between
      await Promise.all([before, after]);
      expect((await stored()).map((s) => [s.mode, s.n, s.sum])).toEqual([['median', 1, 0.8]]);
    });
  });

  it('counts presses in the window, at most PRESSES_PER_SECOND_MAX a participant a second, and lets them go when it ends', async () => {
    const button = { ...controls.get(1)!, aggregate: { mode: 'rate' as const, windowMs: 200 } };
    await withFold('gw-rate', async (fold, stored) => {
      const at = Date.now();
      await Promise.all([...Array.from({ length: 1000 }, () => fold.add('show', button, 'sub-1', null, at)), fold.add('show', button, 'sub-2', null, at)]);
      await new Promise((r) => setTimeout(r, 450));
      const summaries = await stored();
      // sub-1's 1,000 presses in one instant count 10; sub-2's one press counts
      expect(summaries.map((s) => [s.n, s.sum])).toEqual([
        [2, PRESSES_PER_SECOND_MAX + 1],
        [0, 0],
      ]);
      expect(summaries[1]!.ts - at).toBeGreaterThanOrEqual(200 - 10); // presses leave with their 10 ms bucket
    });
  });

  it('lets a value go when its window ends: the next summary counts nobody, and then the fold falls silent', async () => {
    const short = { ...controls.get(2)!, aggregate: { mode: 'mean' as const, windowMs: 100 } };
    await withFold('gw-short', async (fold, stored) => {
      const at = Date.now();
      await fold.add('show', short, 'sub-1', 0.25, at);
      await new Promise((r) => setTimeout(r, 300));
      const summaries = await stored();
      expect(summaries.map((s) => [s.n, s.sum])).toEqual([
        [1, 0.25],
        [0, 0],
      ]);
      expect(summaries[1]!.ts - at).toBeGreaterThanOrEqual(100);
      expect(summaries[1]!.ts - at).toBeLessThan(100 + 5 * FOLD_MS + 100); // one tick after the window, give or take a busy machine
    });
  });
});

describe('crowd fold: leases, retraction, caps and size', () => {
  const slider = { ...controls.get(2)!, aggregate: { mode: 'mean' as const, windowMs: 600_000 } };

  it('refreshes its lease: a window holding participants is summarised every LEASE_REFRESH_MS though nothing changes', async () => {
    await withFold('gw-lease', async (fold, stored) => {
      await fold.add('show', slider, 'sub-1', 0.5, Date.now());
      await new Promise((r) => setTimeout(r, 2.5 * LEASE_REFRESH_MS));
      const summaries = await stored();
      expect(summaries.length).toBe(3);
      expect(summaries.every((s) => s.n === 1 && s.sum === 0.5)).toBe(true);
      for (let i = 1; i < summaries.length; i++) expect(summaries[i]!.ts - summaries[i - 1]!.ts).toBeGreaterThanOrEqual(LEASE_REFRESH_MS);
    });
  });

  it('does not count an action whose summary could not be stored: its answer is an error, and the participant counts with the value it had', async () => {
    const keys = new RedisKeys(randomPrefix());
    const vote = { ...controls.get(4)!, aggregate: { mode: 'votes' as const, windowMs: 600_000 } };
    const fold = new CrowdFold(new ActionLog(client, keys, { maxLen: 1000, retentionMs: 600_000 }), 'gw-refused', FOLD_MS);
    try {
      await fold.add('show', vote, 'sub-1', 0, Date.now());
      // the stream's key holds a string: Redis refuses every append (WRONGTYPE)
      await client.set(keys.actions('show'), 'not a stream');
      const refused = await Promise.allSettled([fold.add('show', vote, 'sub-1', 2, Date.now()), fold.add('show', vote, 'sub-1', 1, Date.now()), fold.add('show', vote, 'sub-2', 1, Date.now())]);
      expect(refused.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
      await client.del(keys.actions('show'));
      await new Promise((r) => setTimeout(r, LEASE_REFRESH_MS + 300)); // a lease refresh at the latest
      const summaries = await summariesIn(keys, 'show');
      expect(summaries.length).toBeGreaterThan(0);
      // sub-1 with its vote for 0, as it was answered; sub-2 not at all
      expect(summaries.at(-1)!.n).toBe(1);
      expect(summaries.at(-1)!.votes).toEqual([1, 0, 0]);
    } finally {
      fold.stop();
    }
  });

  it('keeps the presses of a participant that moved to another process counted where they were made, past the lease, until they leave the window', async () => {
    const button = { ...controls.get(1)!, aggregate: { mode: 'rate' as const, windowMs: 600_000 } };
    const keys = new RedisKeys(randomPrefix());
    const [left, came] = ['gw-left', 'gw-came'].map((source) => new CrowdFold(new ActionLog(client, keys, { maxLen: 1000, retentionMs: 600_000 }), source, FOLD_MS));
    try {
      await Promise.all([1, 2, 3, 4].map(() => left!.add('show', button, 'sub-1', null, Date.now())));
      came!.adopt('show', 'sub-1', left!.release('show', 'sub-1'), () => button);
      await came!.add('show', button, 'sub-1', null, Date.now());
      await new Promise((r) => setTimeout(r, CROWD_LEASE_MS + 2 * LEASE_REFRESH_MS)); // past the lease of the process's last change
      const table = new CrowdTable();
      for (const s of await summariesIn(keys, 'show')) table.offer(s);
      const merged = table.changed(Date.now()).find((v) => v.lid === 1);
      // one presser (on the process it came to), five presses in the window: four made on the one it left
      expect([merged?.n, merged?.value[0]]).toEqual([1, 5 / 600]);
    } finally {
      left!.stop();
      came!.stop();
    }
  });

  it('says zero once the presses of a participant that moved on leave the window, rather than leaving its last share to run out', async () => {
    const button = { ...controls.get(1)!, aggregate: { mode: 'rate' as const, windowMs: 300 } };
    await withFold('gw-left-short', async (fold, stored) => {
      await Promise.all([fold.add('show', button, 'sub-1', null, Date.now()), fold.add('show', button, 'sub-1', null, Date.now())]);
      expect(fold.release('show', 'sub-1').length).toBe(1);
      await new Promise((r) => setTimeout(r, 300 + 200));
      expect((await stored()).map((s) => [s.n, s.sum])).toEqual([
        [1, 2],
        [0, 2],
        [0, 0],
      ]);
    });
  });

  it('retracts at a graceful stop: the last summary of a window that counted someone counts nobody', async () => {
    await withFold('gw-retract', async (fold, stored) => {
      await fold.add('show', slider, 'sub-1', 0.5, Date.now());
      const pending = fold.add('show', slider, 'sub-2', 0.7, Date.now()); // not folded yet: stored before the retraction
      await fold.retract();
      await pending;
      const summaries = await stored();
      expect(summaries.map((s) => s.n)).toEqual([1, 2, 0]);
      expect(summaries[2]!.sum).toBe(0);
    });
  });

  it('holds at most maxParticipants per control: the participant whose value is oldest leaves first, counted as an eviction', async () => {
    let evicted = 0;
    await withFold(
      'gw-cap',
      async (fold, stored) => {
        const at = Date.now();
        await Promise.all(Array.from({ length: 150 }, (_, i) => fold.add('show', slider, `sub-${i}`, i / 1000, at + i)));
        expect(fold.participants()).toBe(100);
        const last = (await stored()).at(-1)!;
        expect(last.n).toBe(100);
        const newest = Array.from({ length: 100 }, (_, k) => (k + 50) / 1000).reduce((a, b) => a + b, 0);
        expect(last.sum).toBeCloseTo(newest, 9);
      },
      { maxParticipants: 100, onEvicted: () => evicted++ },
    );
    expect(evicted).toBe(50);
  });

  it('writes a vote of many options sparsely, and a large summary at most every LARGE_SUMMARY_MS', async () => {
    const options = Array.from({ length: 1000 }, (_, index) => ({ index, label: `Option ${index}` }));
    const poll = { ...controls.get(4)!, options, aggregate: { mode: 'votes' as const, windowMs: 600_000 } };
    const keys = new RedisKeys(randomPrefix());
    const fold = new CrowdFold(new ActionLog(client, keys, { maxLen: 10_000, retentionMs: 600_000 }), 'gw-poll', FOLD_MS);
    try {
      await Promise.all([0, 1, 2].map((p) => fold.add('poll', poll, `sub-${p}`, p * 7, Date.now())));
      const [first] = await client.xrange(keys.actions('poll'), '-', '+');
      console.log(`figure: a 1,000-option votes summary with 3 options chosen: ${first![1][1]!.length} characters`);
      expect(first![1][1]!.length).toBeLessThan(400);
      const decoded = (await summariesIn(keys, 'poll'))[0]!;
      expect(decoded.votes!.length).toBe(1000);
      expect([decoded.votes![0], decoded.votes![7], decoded.votes![14], decoded.votes!.reduce((a, b) => a + b, 0)]).toEqual([1, 1, 1, 3]);
      // every option chosen: a dense summary of about 3 KB, appended at most every LARGE_SUMMARY_MS however often votes come
      await Promise.all(options.map((o) => fold.add('poll', poll, `early-${o.index}`, o.index, Date.now())));
      const before = (await client.xlen(keys.actions('poll')));
      const started = Date.now();
      const answers: Promise<void>[] = [];
      for (let i = 0; Date.now() - started < 500; i++) {
        answers.push(fold.add('poll', poll, `voter-${i}`, i % 1000, Date.now()));
        await new Promise((r) => setTimeout(r, 2));
      }
      await Promise.all(answers);
      const large = (await client.xrange(keys.actions('poll'), '-', '+')).slice(before).map(([, f]) => JSON.parse(f[1]!) as { ts: number });
      expect(large.length).toBeGreaterThanOrEqual(3);
      console.log(`figure: ${answers.length} votes in 500 ms on a 1,000-option poll: ${large.length} summaries`);
      expect(large.length).toBeLessThanOrEqual(Math.ceil(500 / LARGE_SUMMARY_MS) + 2);
    } finally {
      fold.stop();
    }
  });
});
