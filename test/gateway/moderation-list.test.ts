// The moderators' view of a queue is one moment of it: while other operators decide, every read
// of a layout's queue and its decisions shows each held text in exactly one of them, never in
// neither (gone from the queue, its decision not yet shown) nor in both.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStores, type Stores } from '../../gateway/store/stores.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';

const LAYOUT = 'list-wall';
const ITEMS = 300;
const HOLD_MS = 900_000;
const TRIM = { maxLen: 10_000, retentionMs: 3_600_000 };

const redis = useRedis();
let reader: Redis;
let decider: Redis;
let readStores: Stores;
let decideStores: Stores;

beforeAll(() => {
  const prefix = randomPrefix();
  // two connections, as two gateways (or two operators' requests) have
  reader = new Redis(redis.get().server.url);
  decider = new Redis(redis.get().server.url);
  readStores = createStores(reader, prefix);
  decideStores = createStores(decider, prefix);
});
afterAll(() => {
  reader?.disconnect();
  decider?.disconnect();
});

describe('the moderation list', () => {
  it(`shows each of ${ITEMS} held texts in the queue or among the decisions, never neither, while another connection decides them one by one`, async () => {
    const now = Date.now();
    const ids: string[] = [];
    for (let i = 0; i < ITEMS; i++) {
      const id = `item-${String(i).padStart(4, '0')}`;
      ids.push(id);
      const r = await readStores.moderation.hold(
        { id, layoutId: LAYOUT, sub: `fan-${i % 7}`, lid: 5, address: '/005', text: `text ${i}`, heldAt: now + i, exp: now + 3_600_000 },
        { perLayout: ITEMS, perParticipant: ITEMS, holdMs: HOLD_MS },
      );
      expect(r.added).toBe(true);
    }
    let deciding = true;
    const decisions = (async () => {
      for (const [i, id] of ids.entries()) await decideStores.moderation.decide(LAYOUT, id, i % 2 ? 'approve' : 'reject', 'admin:test', TRIM);
      deciding = false;
    })();
    let reads = 0;
    const torn: string[] = [];
    while (deciding) {
      const { queue, decided } = await readStores.moderation.list(LAYOUT, HOLD_MS, Date.now(), ITEMS);
      reads++;
      const queued = new Set(queue.map((q) => q.id));
      const done = new Set(decided.map((d) => d.id));
      const neither = ids.filter((id) => !queued.has(id) && !done.has(id));
      const both = ids.filter((id) => queued.has(id) && done.has(id));
      if (neither.length > 0 || both.length > 0) torn.push(`read ${reads}: in neither ${JSON.stringify(neither)}, in both ${JSON.stringify(both)}`);
    }
    await decisions;
    expect(reads).toBeGreaterThan(10);
    expect(torn).toEqual([]);
    const end = await readStores.moderation.list(LAYOUT, HOLD_MS, Date.now(), ITEMS);
    expect(end.queue).toEqual([]);
    expect(end.decided.map((d) => d.id)).toEqual([...ids].reverse());
  });

  it('reads a queue of 10,000 held texts (MODERATION_QUEUE_MAX allows 100,000), oldest first', async () => {
    const layoutId = 'long-wall';
    const now = Date.now();
    const n = 10_000;
    const bounds = { perLayout: n, perParticipant: 1000, holdMs: HOLD_MS };
    for (let i = 0; i < n; i += 500) {
      const batch = Array.from({ length: Math.min(500, n - i) }, (_, j) => i + j);
      const held = await Promise.all(batch.map((k) => readStores.moderation.hold({ id: `long-${k}`, layoutId, sub: `fan-${k % 100}`, lid: 5, address: '/005', text: `text ${k}`, heldAt: now + k, exp: now + 3_600_000 }, bounds)));
      expect(held.every((h) => h.added)).toBe(true);
    }
    const { queue, decided } = await readStores.moderation.list(layoutId, HOLD_MS, Date.now());
    expect(queue.length).toBe(n);
    expect(queue[0]!.id).toBe('long-0');
    expect(queue[n - 1]!.id).toBe(`long-${n - 1}`);
    expect(decided).toEqual([]);
  });
});
