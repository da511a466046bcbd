// A Redis that is up but refuses writes (used memory past maxmemory, noeviction) is an outage, said
// truthfully: every refused write is 503 unavailable (never 500), counted by reason, logged as one
// line per interval with a count (not a stack per request); /readyz names the cause while writes are
// refused, and before, once used memory passes REDIS_MEMORY_READY_SHARE of maxmemory, as a note on
// a 200: every gateway shares that Redis, so a 503 would take every pod out of rotation at once and
// the reads and live sockets that still work with them. The memory's share is a gauge for alerting.
// And with the default limits, one token flooding Idempotency-Keys cannot fill Redis.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eventually, mintToken, postAction, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { sample, scrape } from '../helpers/metrics.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
const client = () => redis.get().client;
const usedMemory = async () => Number(/^used_memory:(\d+)/m.exec(await client().info('memory'))![1]);
const readyz = async (t: TestGateway) => {
  const r = await fetch(`http://127.0.0.1:${t.gw.opsPort}/readyz`);
  return { status: r.status, text: await r.text() };
};
afterEach(() => client().config('SET', 'maxmemory', '0'));

describe('Redis refusing writes (maxmemory reached)', () => {
  let t: TestGateway;
  let token: string;
  const lines: string[] = [];
  beforeAll(async () => {
    const sink = new Writable({ write: (chunk: Buffer, _e, done) => (lines.push(...chunk.toString().split('\n').filter(Boolean)), done()) });
    t = await startTestGateway({ redisUrl: redis.get().server.url, log: pino({ level: 'info' }, sink), overrides: { idempotencyKeysPerParticipant: 100_000 } });
    token = await mintToken(t, t.layoutId, t.apiKey);
  });
  afterAll(() => t.close());

  it('answers 503 unavailable (never 500) on both append paths, counts each refusal, logs a line per interval, and /readyz says why while it stays ready', async () => {
    expect((await readyz(t)).status).toBe(200);
    const before = lines.length;
    await client().config('SET', 'maxmemory', '1'); // every write is refused: OOM
    const statuses = new Map<number, number>();
    const codes = new Set<string>();
    for (let round = 0; round < 10; round++) {
      const answers = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          postAction(t, token, { layoutId: t.layoutId, lid: 2, type: 'Slider', value: 0.5 }, i % 2 === 0 ? { 'idempotency-key': `full-${round}-${i}` } : {}),
        ),
      );
      for (const a of answers) {
        statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
        if (a.body?.error) codes.add(a.body.error.code as string);
      }
    }
    expect([...statuses]).toEqual([[503, 1000]]);
    expect([...codes]).toEqual(['unavailable']);
    const ready = await readyz(t);
    expect(ready.status).toBe(200);
    expect(ready.text).toMatch(/^ready; note: .*Redis refuses writes \(oom/);
    const metrics = await scrape(t.gw.opsPort);
    expect(sample(metrics, 'audience_gateway_redis_writes_refused_total{reason="oom"}')).toBeGreaterThanOrEqual(500);
    const logged = lines.slice(before);
    console.log(`figure: 1,000 refused writes logged as ${logged.length} lines (${logged.join('').length} bytes)`);
    expect(logged.filter((l) => l.includes('unexpected error'))).toEqual([]);
    expect(logged.length).toBeLessThanOrEqual(3);
    expect(logged.join('\n')).toContain('Redis refuses writes');
  });

  it('drops the note once writes are taken, says so ahead of time when used memory nears maxmemory, and serves the share as a gauge', async () => {
    await eventually(async () => (await readyz(t)).text === 'ready\n');
    expect((await postAction(t, token, { layoutId: t.layoutId, lid: 2, type: 'Slider', value: 0.5 })).status).toBe(200);
    expect(sample(await scrape(t.gw.opsPort), 'audience_gateway_redis_memory_used_ratio')).toBe(0); // no maxmemory
    await client().config('SET', 'maxmemory', String(Math.ceil((await usedMemory()) / 0.95)));
    const ready = await readyz(t);
    expect(ready.status).toBe(200);
    expect(ready.text).toMatch(/^ready; note: .*Redis memory at 9\d\.\d % of maxmemory/);
    const ratio = sample(await scrape(t.gw.opsPort), 'audience_gateway_redis_memory_used_ratio');
    expect(ratio).toBeGreaterThan(0.9);
    expect(ratio).toBeLessThan(1.05);
  }, 15_000);
});

describe('one token flooding Idempotency-Keys, with the default limits', () => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await startTestGateway({
      redisUrl: redis.get().server.url,
      // budgets and memory are checked here, not timeouts: a slow reply on a loaded machine is no 503
      overrides: { actionRatePerSecond: 20, actionBurst: 40, idempotencyKeysPerParticipant: 1000, redisCommandTimeoutMs: 5000 },
    });
  });
  afterAll(() => t.close());

  it('gets 429 past its budget, holds little Redis memory, and another participant is served throughout', async () => {
    const flooder = await mintToken(t, t.layoutId, t.apiKey);
    const other = await mintToken(t, t.layoutId, t.apiKey);
    const memoryBefore = await usedMemory();
    await client().config('SET', 'maxmemory', String(memoryBefore + 8 * 1024 * 1024));
    let accepted = 0;
    let limited = 0;
    const otherStatuses: number[] = [];
    const started = Date.now();
    let otherAt = 0;
    // at least 3 s and at least 1,400 requests: a loaded machine sends fewer a second, not fewer in all
    for (let round = 0; Date.now() - started < 3000 || round < 7; round++) {
      const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => postAction(t, flooder, { layoutId: t.layoutId, lid: 2, type: 'Slider', value: 0.5 }, { 'idempotency-key': `flood-${round}-${i}` })));
      for (const a of answers) {
        if (a.status === 200) accepted++;
        else if (a.status === 429) limited++;
        else throw new Error(`unexpected ${a.status} ${JSON.stringify(a.body)}`);
      }
      if (Date.now() - otherAt < 100) continue; // the other participant acts at 10 a second, within its budget
      otherAt = Date.now();
      otherStatuses.push((await postAction(t, other, { layoutId: t.layoutId, lid: 2, type: 'Slider', value: 0.3 }, { 'idempotency-key': `other-${round}` })).status);
    }
    const seconds = (Date.now() - started) / 1000;
    const grew = (await usedMemory()) - memoryBefore;
    console.log(`figure: one token's Idempotency-Key flood for ${seconds.toFixed(1)} s: ${accepted} accepted, ${limited} refused (429); Redis grew ${grew} bytes`);
    expect(accepted).toBeLessThanOrEqual(40 + 20 * Math.ceil(seconds + 1)); // the burst, then the rate (a second of slack)
    expect(limited).toBeGreaterThan(1000);
    expect(new Set(otherStatuses)).toEqual(new Set([200]));
    expect(grew).toBeLessThan(1024 * 1024);
  });
});
