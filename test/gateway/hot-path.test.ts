// The /action hot path's promises about Redis: one XADD per accepted action and no other command,
// the actions of one event-loop turn (and those gathered while a call is in flight) appended in one call, and streams trimmed to about STREAM_MAXLEN.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ActionLog, MAX_BATCH, type AppendWaiter } from '../../gateway/actions/action-log.js';
import type { AppError } from '../../gateway/errors.js';
import { RedisKeys } from '../../gateway/store/keys.js';
import { encodeActionEntry } from '../../schemas/action-entry.js';
import type { ActionEntry, Control } from '../../schemas/types.js';
import { eventually, mintToken, postAction, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';

const redis = useRedis();
let t: TestGateway;
let token: string;

beforeAll(async () => {
  // no periodic re-check during the test: its reads would muddy the count
  t = await startTestGateway({ redisUrl: redis.get().server.url, overrides: { cacheRecheckMs: 300_000, streamMaxLen: 100 } });
  token = await mintToken(t, t.layoutId, t.apiKey);
});
afterAll(() => t.close());

async function commandCalls(): Promise<Map<string, number>> {
  const info = await redis.get().client.info('commandstats');
  return new Map([...info.matchAll(/^cmdstat_([a-z|]+):calls=(\d+)/gm)].map((m) => [m[1]!, Number(m[2])]));
}

describe('the /action hot path', () => {
  it('makes no Redis call per accepted action but its append: one XADD, in a batch script', async () => {
    await postAction(t, token, { layoutId: t.layoutId, lid: 1, type: 'Button' }); // warm: token and layout now cached
    const before = await commandCalls();
    for (let i = 0; i < 25; i++) expect((await postAction(t, token, { layoutId: t.layoutId, lid: 2, type: 'Slider', value: i / 25 })).status).toBe(200);
    const after = await commandCalls();
    const delta = [...after].map(([cmd, n]) => [cmd, n - (before.get(cmd) ?? 0)] as const).filter(([, d]) => d > 0);
    // One request at a time, so each turn's batch holds one action; each call trims once by length and
    // once by age; the test's own INFO is the only other command.
    expect(Object.fromEntries(delta)).toEqual({ evalsha: 25, xadd: 25, xtrim: 50, info: 1 });
  });

  it('trims each stream to about STREAM_MAXLEN entries', async () => {
    for (let i = 0; i < 400; i++) await postAction(t, token, { layoutId: t.layoutId, lid: 1, type: 'Button' });
    const len = await redis.get().client.xlen(`${t.config.redisPrefix}layout:{${t.layoutId}}:actions`);
    expect(len).toBeGreaterThanOrEqual(100);
    expect(len).toBeLessThan(300); // approximate trimming removes whole stream nodes (100 entries each by default)
  });

  it('trims entries older than STREAM_RETENTION_SECONDS at every append, however few there are', async () => {
    const key = `${t.config.redisPrefix}layout:{${t.layoutId}}:actions`;
    const client = redis.get().client;
    await client.del(key);
    const old = Date.now() - (t.config.streamRetentionSeconds + 60) * 1000;
    for (let i = 0; i < 300; i++) await client.xadd(key, `${old + i}-0`, 'action', '{}');
    await postAction(t, token, { layoutId: t.layoutId, lid: 1, type: 'Button' });
    const len = await client.xlen(key);
    expect(len).toBeLessThan(110); // whole nodes of old entries go; the new entry's node may keep a few
    const [first] = await client.xrange(key, '-', '+', 'COUNT', 1);
    expect(Number(first![0].split('-')[0])).toBeGreaterThanOrEqual(old + 200);
  });
});

describe('ActionLog', () => {
  const entry = (i: number): ActionEntry => ({ v: 1, id: `id-${i}`, layoutId: 'show', lid: 1, address: '/001', type: 'Button', value: null, ts: 1_700_000_000_000 + i });

  /** A log on a fresh prefix with its script loaded (entry -1 stored), for `run`; then the calls it made, the ids in its stream and their texts. */
  async function withLog(run: (log: ActionLog) => Promise<void>, maxLen = 10_000): Promise<{ calls: number; ids: string[]; texts: string[] }> {
    const client = new Redis(redis.get().server.url);
    const keys = new RedisKeys(randomPrefix());
    try {
      const log = new ActionLog(client, keys, { maxLen, retentionMs: 600_000 });
      await log.append(entry(-1)); // loads the script
      const before = await commandCalls();
      await run(log);
      const after = await commandCalls();
      const stored = await client.xrange(keys.actions('show'), '-', '+');
      const texts = stored.map(([, fields]) => fields[1]!);
      return { calls: (after.get('evalsha') ?? 0) - (before.get('evalsha') ?? 0), ids: texts.map((t) => (JSON.parse(t) as { id: string }).id), texts };
    } finally {
      client.disconnect();
    }
  }
  const ids = (count: number) => ['id--1', ...Array.from({ length: count }, (_, i) => `id-${i}`)];

  it('appends the actions of one turn in one call, each its own entry, in order', async () => {
    const count = MAX_BATCH + 44; // more than one call's worth
    const r = await withLog(async (log) => {
      await Promise.all(Array.from({ length: count }, (_, i) => log.append(entry(i))));
    });
    expect(r).toMatchObject({ calls: 2, ids: ids(count) });
  });

  it('trims to about its maxLen within one call of a full batch, keeping the newest', async () => {
    const r = await withLog(async (log) => {
      await Promise.all(Array.from({ length: MAX_BATCH }, (_, i) => log.append(entry(i))));
    }, 100);
    expect(r.calls).toBe(1);
    expect(r.ids.length).toBeGreaterThanOrEqual(100);
    expect(r.ids.length).toBeLessThan(200); // whole nodes of 100 entries go
    expect(r.ids.at(-1)).toBe(`id-${MAX_BATCH - 1}`);
  });

  it('sends a second call while one is in flight, then gathers the later turns into the next call, in order', async () => {
    const pauser = new Redis(redis.get().server.url);
    try {
      const r = await withLog(async (log) => {
        await pauser.client('PAUSE', 300, 'WRITE'); // holds the calls in flight
        const appended = [log.append(entry(0))];
        for (let i = 1; i <= 10; i++) {
          await new Promise((r) => setImmediate(r)); // each in a turn of its own
          appended.push(log.append(entry(i)));
        }
        await Promise.all(appended);
      });
      // entry 0 in the first call, entry 1 in a second one sent at once (two calls may be in
      // flight), the nine later turns together in a third once the first is answered
      expect(r).toMatchObject({ calls: 3, ids: ids(11) });
    } finally {
      pauser.disconnect();
    }
  });

  it('answers each waiter of appendFor once: stored, or failed with unavailable and not appended when its client left', async () => {
    const told: string[] = [];
    const waiter = (name: string, gone: boolean): AppendWaiter => ({
      stored: () => told.push(`${name} stored`),
      failed: (e) => told.push(`${name} ${(e as AppError).code}`),
      aborted: () => gone,
    });
    const r = await withLog(async (log) => {
      for (const [i, gone] of [false, true, false].entries()) log.appendFor('show', encodeActionEntry(entry(i)), waiter(`w${i}`, gone));
      await new Promise((r) => setTimeout(r, 200));
    });
    expect(told.sort()).toEqual(['w0 stored', 'w1 unavailable', 'w2 stored']);
    expect(r).toMatchObject({ calls: 1, ids: ['id--1', 'id-0', 'id-2'] });
  });

  it("stores new actions' entries, text of any kind included, beside entries given as text, in one call and in order", async () => {
    const text: Control = { lid: 5, address: '/005', type: 'String', props: { label: 't' } };
    const pad: Control = { lid: 6, address: '/pad é', type: 'XYPad', props: { label: 'p' } };
    const values = ['plain', 'é 漢 😀', '\u2028 "quoted" \\ and \n', ''];
    const told: string[] = [];
    const waiter = (name: string): AppendWaiter => ({ stored: () => told.push(name), failed: (e) => told.push(String(e)), aborted: () => false });
    const r = await withLog(async (log) => {
      values.forEach((v, i) => log.appendAction('show', text, v, 1_700_000_000_000 + i, waiter(`t${i}`)));
      log.appendFor('show', encodeActionEntry(entry(9)), waiter('given'));
      log.appendAction('show', pad, [0.25, 1], 1_700_000_000_009, waiter('pad'));
      await eventually(() => told.length === values.length + 2);
    });
    expect(told).toEqual(['t0', 't1', 't2', 't3', 'given', 'pad']);
    expect(r.calls).toBe(1);
    const stored = r.texts.slice(1).map((t) => JSON.parse(t) as ActionEntry);
    expect(stored.slice(0, 4).map((e) => [e.value, e.address, e.ts])).toEqual(values.map((v, i) => [v, '/005', 1_700_000_000_000 + i]));
    expect(r.texts[5]).toBe(encodeActionEntry(entry(9)));
    expect(stored[5]).toMatchObject({ lid: 6, address: '/pad é', type: 'XYPad', value: [0.25, 1] });
    for (const [i, t] of r.texts.slice(1).entries()) if (i !== 4) expect(t).toBe(encodeActionEntry(JSON.parse(t) as ActionEntry));
  });

  it('keeps each waiter with its own entry when an entry cannot be written (the append throws, and nothing of it is queued)', async () => {
    const told: string[] = [];
    const waiter = (name: string): AppendWaiter => ({ stored: () => told.push(`${name} stored`), failed: (e) => told.push(`${name} ${(e as AppError).code}`), aborted: () => false });
    const r = await withLog(async (log) => {
      expect(() => log.appendFor('show', 42 as unknown as string, waiter('broken'))).toThrow(TypeError);
      log.appendFor('show', encodeActionEntry(entry(0)), waiter('w0'));
      await eventually(() => told.length >= 1);
      await new Promise((r) => setTimeout(r, 100)); // and nothing more
    });
    expect(told).toEqual(['w0 stored']);
    expect(r).toMatchObject({ calls: 1, ids: ids(1) });
  });

  it('stores a batch when Redis has lost its script (NOSCRIPT: restarted, flushed, failed over), and the ones after it', async () => {
    const r = await withLog(async (log) => {
      await redis.get().client.script('FLUSH');
      await Promise.all([log.append(entry(0)), log.append(entry(1))]);
      await Promise.all([log.append(entry(2)), log.append(entry(3))]);
    });
    expect(r.ids).toEqual(ids(4));
  });

  it('tells every waiter of a call even when one of them throws, and reports what it threw', async () => {
    const told: string[] = [];
    const reported: unknown[] = [];
    const client = new Redis(redis.get().server.url);
    try {
      const log = new ActionLog(client, new RedisKeys(randomPrefix()), { maxLen: 10_000, retentionMs: 600_000 }, undefined, (e) => reported.push(e));
      const waiter = (name: string, stored: () => void): AppendWaiter => ({ stored, failed: () => told.push(`${name} failed`), aborted: () => false });
      const broken = new Error('a waiter that throws');
      log.appendFor('show', encodeActionEntry(entry(0)), waiter('w0', () => told.push('w0 stored')));
      log.appendFor('show', encodeActionEntry(entry(1)), waiter('w1', () => {
        throw broken;
      }));
      log.appendFor('show', encodeActionEntry(entry(2)), waiter('w2', () => told.push('w2 stored')));
      await eventually(() => told.length >= 2);
      await new Promise((r) => setTimeout(r, 100)); // and nothing more (w1's throw is not told as a failure)
      expect(told).toEqual(['w0 stored', 'w2 stored']);
      expect(reported).toEqual([broken]);
    } finally {
      client.disconnect();
    }
  });

  it('rejects every waiter with unavailable when Redis refuses the call, and stores nothing', async () => {
    const client = new Redis(redis.get().server.url);
    const keys = new RedisKeys(randomPrefix());
    try {
      await client.set(keys.actions('show'), 'not a stream'); // XADD on it fails with WRONGTYPE
      const log = new ActionLog(client, keys, { maxLen: 10_000, retentionMs: 600_000 });
      const results = await Promise.allSettled([log.append(entry(1)), log.append(entry(2))]);
      for (const r of results) {
        expect(r.status).toBe('rejected');
        expect(((r as PromiseRejectedResult).reason as AppError).code).toBe('unavailable');
      }
    } finally {
      client.disconnect();
    }
  });
});
