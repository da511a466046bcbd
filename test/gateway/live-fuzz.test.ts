// 10,000 seeded frames on live sockets: bad JSON, wrong ops and fields, huge and hostile values,
// binary frames, retries with an idempotency key, and valid actions among them. The gateway never
// answers `internal`, answers every frame that is not a valid action with one error, acks every
// valid action once and stores it once, and keeps serving. Redis stops for a second while the
// frames are handled, as a loaded machine can hold it up: answers wait for it, and none is
// `unavailable`. Rerun with FUZZ_SEED=<seed>.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeStreamEntry } from '../../schemas/action-entry.js';
import { eventually, mintToken, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { connectLive, type LiveClient } from '../helpers/live.js';
import { LOADED_MACHINE_MS } from '../helpers/loaded-machine.js';
import { stallRedis, useRedis } from '../helpers/redis.js';
import { fuzzSeed, seededRandom } from '../helpers/seeded-random.js';

const redis = useRedis();
let t: TestGateway;
beforeAll(async () => {
  // a Redis call waits as long as a loaded machine may hold Redis up: what is answered depends on the frame alone
  t = await startTestGateway({ redisUrl: redis.get().server.url, overrides: { redisCommandTimeoutMs: LOADED_MACHINE_MS } });
});
afterAll(() => t.close());

const seed = fuzzSeed();
const FRAMES = 10_000;
/** The longest String the contract takes, read from the schema so the fuzz straddles the real bound. */
const STRING_MAX: number = JSON.parse(readFileSync(new URL('../../schemas/action-value.schema.json', import.meta.url), 'utf8')).$defs.String.maxLength;

type Planned = { text: string | Buffer; expect: 'ack' | 'error'; ref: string | null; stored?: string };

/** One frame of the fuzz: what is sent, and what must come back. */
function plan(random: () => number, n: number): Planned {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const ref = `f${n}`;
  const kind = random();
  if (kind < 0.3) {
    const value = `fuzz-${seed}-${n}`;
    return { text: JSON.stringify({ op: 'action', ref, lid: 5, type: 'String', value }), expect: 'ack', ref, stored: value };
  }
  if (kind < 0.4) {
    const valid = pick([
      { lid: 1, type: 'Button' },
      { lid: 2, type: 'Slider', value: random() },
      { lid: 3, type: 'Toggle', value: random() < 0.5 },
      { lid: 4, type: 'Index', value: Math.floor(random() * 3) },
      { lid: 6, type: 'XYPad', value: [random(), random()] },
    ]);
    return { text: JSON.stringify({ op: 'action', ref, ...valid }), expect: 'ack', ref };
  }
  if (kind < 0.45) return { text: Buffer.from(Array.from({ length: 1 + Math.floor(random() * 64) }, () => Math.floor(random() * 256))), expect: 'error', ref: null };
  if (kind < 0.55) {
    const junk = pick(['', '{', 'null', '[]', '"op"', '{"op":', '\u0000', '{"op":"action"', 'NaN', '{}}', '\ud800']);
    return { text: junk, expect: 'error', ref: null };
  }
  const hostile = pick<unknown>([
    'x'.repeat(Math.floor(random() * 12_000)),
    'x'.repeat(STRING_MAX),
    'x'.repeat(STRING_MAX + 1),
    -1e308,
    2 ** 53,
    Number.MIN_VALUE,
    [1, 2, 3],
    { nested: { deeper: [1, { x: 'y' }] } },
    '\u0000\u202e\ud83d\ude00',
    null,
    true,
    Array.from({ length: 500 }, () => random()),
  ]);
  const bad = pick<Record<string, unknown>>([
    { op: pick(['dance', 'ACTION', '', 'ack', 'page', 'crowd']), ref },
    { op: 'action', ref, lid: pick([0, -1, 99, 1.5, '1', 2 ** 40]), type: 'Button' },
    { op: 'action', ref, lid: 2, type: 'Slider', value: hostile },
    { op: 'action', ref, lid: 5, type: 'String', value: hostile },
    { op: 'action', ref, lid: 4, type: 'Index', value: hostile },
    { op: 'action', ref, lid: 1, type: pick(['Slider', 'Knob', '', null]) },
    { op: 'action', ref, lid: 1, type: 'Button', extra: hostile },
    { op: 'action', ref, lid: 1, type: 'Button', layoutId: pick(['other', '', 42]) },
    { op: 'action', ref, lid: 1, type: 'Button', idempotencyKey: pick(['', 'has space', 'ü', 'x'.repeat(65), 7]) },
    { op: 'restate', ref, values: hostile },
    { op: 'restate', ref, values: [{ lid: 2, type: 'Slider', value: hostile, ageMs: pick<unknown>([0, 5000, -1, 1.5, 86_400_001, '5', null]) }] },
    { op: 'time', ref, t0: hostile },
  ]);
  // a restatement with a valid age is acked: this layout aggregates nothing, so its value is passed over
  const restated = bad.op === 'restate' && Array.isArray(bad.values) ? (bad.values as { ageMs?: unknown }[])[0] : undefined;
  if (restated instanceof Object && Number.isInteger(restated.ageMs) && (restated.ageMs as number) >= 0 && (restated.ageMs as number) <= 86_400_000) return { text: JSON.stringify(bad), expect: 'ack', ref };
  // a value that happens to be valid is an action like any other
  if (bad.op === 'action' && bad.lid === 2 && bad.type === 'Slider' && typeof bad.value === 'number' && bad.value >= 0 && bad.value <= 1) return { text: JSON.stringify(bad), expect: 'ack', ref };
  // the String hostiles without U+0000 are runs of 'x': valid up to the schema's bound, refused past it
  if (bad.op === 'action' && bad.lid === 5 && typeof bad.value === 'string' && !bad.value.includes('\u0000')) return { text: JSON.stringify(bad), expect: bad.value.length <= STRING_MAX ? 'ack' : 'error', ref };
  return { text: JSON.stringify(bad), expect: 'error', ref };
}

describe(`the live channel under ${FRAMES} fuzzed frames (seed ${seed})`, () => {
  it('never answers internal, answers every bad frame with one error, acks and stores every valid action once, and keeps serving', async () => {
    const random = seededRandom(seed);
    const sockets: LiveClient[] = [];
    for (let i = 0; i < 4; i++) sockets.push(await connectLive(t.url, await mintToken(t, t.layoutId, t.apiKey)));
    await Promise.all(sockets.map((s) => s.next('page')));
    const planned: Planned[][] = sockets.map(() => []);
    const retries: { socket: number; ref: string; key: string; value: string }[] = [];
    for (let n = 0; n < FRAMES; n++) {
      const i = Math.floor(random() * sockets.length);
      if (random() < 0.01) {
        // a retry: the same action twice with one idempotency key, acked twice, stored once
        const value = `retry-${seed}-${n}`;
        const frame = { op: 'action', lid: 5, type: 'String', value, idempotencyKey: `k-${n}` };
        sockets[i]!.send({ ...frame, ref: `r${n}a` });
        sockets[i]!.send({ ...frame, ref: `r${n}b` });
        retries.push({ socket: i, ref: `r${n}`, key: `k-${n}`, value });
        continue;
      }
      const p = plan(random, n);
      planned[i]!.push(p);
      sockets[i]!.ws.send(p.text, { binary: Buffer.isBuffer(p.text) });
    }
    await stallRedis(redis.get().server, 1_000); // while the gateway still works through the frames
    const answers = (s: LiveClient) => s.frames.filter((f) => f.op === 'ack' || f.op === 'error');
    const expectedAnswers = planned.map((ps, i) => ps.length + 2 * retries.filter((r) => r.socket === i).length);
    await eventually(() => sockets.every((s, i) => answers(s).length >= expectedAnswers[i]!), 30_000).catch(() => {});
    for (const [i, s] of sockets.entries()) {
      const got = answers(s);
      const failure = `seed ${seed}, socket ${i}`;
      expect(s.ws.readyState, failure).toBe(s.ws.OPEN);
      expect(got.length, failure).toBe(expectedAnswers[i]);
      expect(got.filter((f) => f.op === 'error' && ['internal', 'unavailable'].includes((f.error as { code: string }).code)), failure).toEqual([]);
      const byRef = new Map<string, string[]>();
      for (const f of got) if (typeof f.ref === 'string') byRef.set(f.ref, [...(byRef.get(f.ref) ?? []), f.op]);
      for (const p of planned[i]!) {
        if (p.ref === null) continue;
        expect(byRef.get(p.ref), `${failure}, frame ${p.ref}: ${String(p.text).slice(0, 120)}`).toEqual([p.expect]);
      }
      for (const r of retries.filter((x) => x.socket === i)) expect([byRef.get(`${r.ref}a`), byRef.get(`${r.ref}b`)], failure).toEqual([['ack'], ['ack']]);
      // frames that do not parse get ref null: as many errors with ref null as planned
      expect(got.filter((f) => f.ref === null).length, failure).toBe(planned[i]!.filter((p) => p.ref === null).length);
    }
    // stored once: every valid String action, and each retried one once
    const entries = await redis.get().client.xrange(t.gw.stores.keys.actions(t.layoutId), '-', '+');
    const values = entries.map(([, fields]) => decodeStreamEntry(fields)).flatMap((d) => (d.ok && 'entry' in d && typeof d.entry.value === 'string' ? [d.entry.value] : []));
    const count = new Map<string, number>();
    for (const v of values) count.set(v, (count.get(v) ?? 0) + 1);
    const stored = planned.flat().flatMap((p) => (p.stored ? [p.stored] : []));
    expect(stored.filter((v) => count.get(v) !== 1), `seed ${seed}`).toEqual([]);
    expect(retries.filter((r) => count.get(r.value) !== 1), `seed ${seed}`).toEqual([]);
    console.log(`figure: ${FRAMES} fuzzed frames: ${stored.length} valid String actions stored once each, ${retries.length} retried actions stored once`);
    // and it keeps serving: a new socket gets its page
    const after = await connectLive(t.url, await mintToken(t, t.layoutId, t.apiKey));
    await after.next('page');
    for (const s of [...sockets, after]) s.ws.close();
  }, 90_000);

  it('closes a socket on a frame over the size limit, and only that one', async () => {
    const random = seededRandom(seed + 1);
    const calm = await connectLive(t.url, await mintToken(t, t.layoutId, t.apiKey));
    for (let i = 0; i < 5; i++) {
      const big = await connectLive(t.url, await mintToken(t, t.layoutId, t.apiKey));
      await big.next('page');
      big.ws.send(Buffer.alloc(t.config.maxBodyBytes + 1 + Math.floor(random() * 100_000), 0x7b), { binary: random() < 0.5 });
      expect([1006, 1009]).toContain((await big.closed).code);
    }
    const before = calm.frames.length;
    calm.send({ op: 'action', ref: 'still', lid: 1, type: 'Button' });
    expect(await calm.next('ack', before)).toEqual({ op: 'ack', ref: 'still' });
    calm.ws.close();
  });
});
