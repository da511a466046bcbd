// The live channel's `restate`: a socket's latest values after a reconnect, counted in the crowd
// where the process holds none of the participant's for that control, with the time they were
// sent; a value held here wins, one past its window counts nothing, one that does not fit the
// control refuses the frame and counts nothing of it, and each costs one action of the budget.
// A real gateway and Redis; the crowd as the live channel's crowd frames carry it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FRAME_LIMITS } from '../../schemas/live-protocol.js';
import { CROWD_LAYOUT, CROWD_WINDOW_MS } from '../helpers/crowd.js';
import { eventually, mintToken, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { connectLive, type Frame, type LiveClient } from '../helpers/live.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ redisUrl: redis.get().server.url, layout: CROWD_LAYOUT, overrides: { actionRatePerSecond: 1, actionBurst: 3 } });
});
afterAll(() => t.close());

/** The newest crowd frame of `lid` a socket got. */
const crowdOf = (c: LiveClient, lid: number) => c.frames.filter((f) => f.op === 'crowd' && f.lid === lid).pop() as (Frame & { n: number; value: number | number[] }) | undefined;

async function answer(c: LiveClient, frame: object): Promise<Frame> {
  const before = c.frames.length;
  c.send(frame);
  const found = () => c.frames.slice(before).find((f) => f.op === 'ack' || f.op === 'error');
  await eventually(() => found() !== undefined);
  return found()!;
}

describe('restate on the live channel', () => {
  it("counts a participant's restated values where none is held, passes over controls not aggregated, and keeps a newer value held", async () => {
    const watcher = await connectLive(t.url, await mintToken(t, t.layoutId, t.apiKey));
    const phone = await connectLive(t.url, await mintToken(t, t.layoutId, t.apiKey));
    const restated = await answer(phone, {
      op: 'restate',
      ref: 'r1',
      values: [
        { lid: 3, type: 'Toggle', value: true, ageMs: 1000 },
        { lid: 2, type: 'Slider', value: 0.5, ageMs: 500 },
        { lid: 1, type: 'Button', ageMs: 10 }, // a press: not restated
        { lid: 12, type: 'Slider', value: 0.7, ageMs: 10 }, // not aggregated
        { lid: 99, type: 'Slider', value: 0.7, ageMs: 10 }, // not on the page
      ],
    });
    expect(restated).toEqual({ op: 'ack', ref: 'r1' });
    await eventually(() => crowdOf(watcher, 3)?.n === 1 && crowdOf(watcher, 2)?.n === 1);
    expect(crowdOf(watcher, 3)!.value).toBe(1);
    expect(crowdOf(watcher, 2)!.value).toBe(0.5);
    expect(crowdOf(watcher, 1)).toBeUndefined();

    // held here: the newer value wins over a restated one
    const other = await connectLive(t.url, await mintToken(t, t.layoutId, t.apiKey));
    other.send({ op: 'action', ref: 'a1', lid: 2, type: 'Slider', value: 0.9 });
    expect(await other.next('ack')).toEqual({ op: 'ack', ref: 'a1' });
    expect(await answer(other, { op: 'restate', ref: 'r2', values: [{ lid: 2, type: 'Slider', value: 0.1, ageMs: 2000 }] })).toEqual({ op: 'ack', ref: 'r2' });
    await eventually(() => crowdOf(watcher, 2)?.n === 2);
    await new Promise((r) => setTimeout(r, 300));
    expect(crowdOf(watcher, 2)).toMatchObject({ n: 2, value: 0.7 });
    for (const c of [watcher, phone, other]) c.ws.close();
  });

  it('counts nothing of a value past its window, nor of a frame with a value that does not fit (invalid_value)', async () => {
    const watcher = await connectLive(t.url, await mintToken(t, t.layoutId, t.apiKey));
    await new Promise((r) => setTimeout(r, 300));
    const before = crowdOf(watcher, 4)?.n ?? 0;
    const phone = await connectLive(t.url, await mintToken(t, t.layoutId, t.apiKey));
    expect(await answer(phone, { op: 'restate', ref: 'old', values: [{ lid: 4, type: 'Index', value: 1, ageMs: CROWD_WINDOW_MS + 1000 }] })).toEqual({ op: 'ack', ref: 'old' });
    const bad = await answer(phone, { op: 'restate', ref: 'bad', values: [{ lid: 4, type: 'Index', value: 2, ageMs: 10 }, { lid: 3, type: 'Toggle', value: 'yes', ageMs: 10 }] });
    expect(bad).toMatchObject({ op: 'error', ref: 'bad', error: { code: 'invalid_value' } });
    // a later action still counts: the fold is not behind
    expect(await answer(phone, { op: 'action', ref: 'a', lid: 6, type: 'XYPad', value: [0.5, 0.5] })).toEqual({ op: 'ack', ref: 'a' });
    await eventually(() => crowdOf(watcher, 6) !== undefined);
    expect(crowdOf(watcher, 4)?.n ?? 0).toBe(before);
    for (const c of [watcher, phone]) c.ws.close();
  });

  it('refuses a frame outside the schema with invalid_body, and costs one action of the budget each', async () => {
    const phone = await connectLive(t.url, await mintToken(t, t.layoutId, t.apiKey));
    const value = { lid: 2, type: 'Slider', value: 0.5, ageMs: 10 };
    for (const frame of [
      { op: 'restate', ref: 'e', values: [] },
      { op: 'restate', ref: 'm', values: Array.from({ length: FRAME_LIMITS.restateMaxValues + 1 }, () => value) },
      { op: 'restate', ref: 'n', values: [{ ...value, ageMs: -1 }] },
      { op: 'restate', ref: 'x', values: [{ ...value, extra: 1 }] },
      { op: 'restate', values: [value] },
    ]) {
      expect(await answer(phone, frame)).toMatchObject({ op: 'error', error: { code: 'invalid_body' } });
    }
    // a burst of 3 actions: two restates and an action take it, the fourth is refused
    expect(await answer(phone, { op: 'restate', ref: 'b1', values: [value] })).toEqual({ op: 'ack', ref: 'b1' });
    expect(await answer(phone, { op: 'restate', ref: 'b2', values: [value] })).toEqual({ op: 'ack', ref: 'b2' });
    expect(await answer(phone, { op: 'action', ref: 'b3', lid: 2, type: 'Slider', value: 0.6 })).toEqual({ op: 'ack', ref: 'b3' });
    expect(await answer(phone, { op: 'restate', ref: 'b4', values: [value] })).toMatchObject({ op: 'error', ref: 'b4', error: { code: 'rate_limited' } });
    phone.ws.close();
  });
});
