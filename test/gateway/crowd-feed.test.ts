// The live channel's crowd feed on a real Redis: a subscription that stops delivering without an
// error (here it is dropped behind the feed's back, as a cluster client's shard subscriber replaced
// under it does) is found by the feed's own probe and made again, so the layout's crowd reaches the
// phones again within PROBE_EVERY_MS + PROBE_TIMEOUT_MS; a healthy one is never made again.
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { CrowdFeed, PROBE_EVERY_MS, PROBE_TIMEOUT_MS } from '../../gateway/live/crowd-feed.js';
import { RedisKeys } from '../../gateway/store/keys.js';
import { encodeCrowdSummary } from '../../schemas/action-entry.js';
import type { CrowdSummary } from '../../schemas/aggregate.js';
import type { CrowdValue } from '../../schemas/crowd-merge.js';
import { eventually } from '../helpers/gateway.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';

const redis = useRedis();
const LAYOUT = 'feed-show';
const cleanups: (() => void)[] = [];
afterEach(() => cleanups.splice(0).forEach((c) => c()));

let seq = 0;
const summary = (n: number): CrowdSummary => ({ v: 2, kind: 'summary', id: `s${++seq}`, layoutId: LAYOUT, lid: 2, address: '/002', type: 'Slider', mode: 'mean', windowMs: 60_000, source: 'gw-other', seq, ts: Date.now(), n, sum: n / 2, sumSq: n / 4 });

function feed() {
  const keys = new RedisKeys(randomPrefix());
  const subscriber = new Redis(redis.get().server.url);
  const publisher = new Redis(redis.get().server.url);
  const seen: CrowdValue[] = [];
  const misses: string[] = [];
  const f = new CrowdFeed(subscriber, keys, {
    now: Date.now,
    onUnavailable: (what) => misses.push(what),
    probe: (channel, text) => publisher.spublish(channel, text),
  });
  f.follow((_layoutId, values) => seen.push(...values));
  cleanups.push(() => {
    f.stop();
    publisher.disconnect();
  });
  const channel = keys.liveChannel(LAYOUT);
  return { f, subscriber, seen, misses, channel, publish: (n: number) => publisher.spublish(channel, encodeCrowdSummary(summary(n))) };
}

describe('the crowd feed checks its own subscription', () => {
  it('finds a subscription that stopped delivering and makes it again: summaries arrive again', async () => {
    const { f, subscriber, seen, misses, channel, publish } = feed();
    f.watch(LAYOUT);
    await eventually(async () => {
      await publish(5);
      return seen.some((v) => v.n === 5);
    });
    await subscriber.sunsubscribe(channel); // deaf, with no error anywhere
    await publish(6);
    await new Promise((r) => setTimeout(r, 500));
    expect(seen.some((v) => v.n === 6)).toBe(false);
    const lostAt = Date.now();
    await eventually(async () => {
      await publish(7);
      return seen.some((v) => v.n === 7);
    }, PROBE_EVERY_MS + PROBE_TIMEOUT_MS + 2000);
    expect(misses).toContain('live_crowd_resubscribe');
    process.stdout.write(`a deaf crowd subscription delivered again ${Date.now() - lostAt} ms after it was lost\n`);
  }, 15_000);

  it('never makes a healthy subscription again, and ignores probes as crowd values', async () => {
    const { f, seen, misses, publish } = feed();
    f.watch(LAYOUT);
    await eventually(async () => {
      await publish(3);
      return seen.some((v) => v.n === 3);
    });
    await new Promise((r) => setTimeout(r, PROBE_EVERY_MS * 2 + 500)); // two probes come and go
    expect(misses).toEqual([]);
    expect(seen.every((v) => v.lid === 2)).toBe(true);
  }, 15_000);
});
