// The request path's metrics render exactly as prom-client's own would for the same events.
import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { HotPathCounter, HotPathHistogram } from '../../gateway/hot-path-metrics.js';

const BUCKETS = [0.001, 0.01, 0.1, 1];
const OBSERVED: [string, number][] = [
  ['/action', 0.0004],
  ['/action', 0.001], // on a bound: counts in that bucket (le is inclusive)
  ['/action', 0.05],
  ['/token', 3],
  ['/action', 0.2],
];

describe('HotPathHistogram', () => {
  it('renders the same text as a prom-client Histogram given the same observations', async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const live = new HotPathHistogram(ours, 'req_seconds', 'Request time.', ['route'], BUCKETS);
    const reference = new Histogram({ name: 'req_seconds', help: 'Request time.', labelNames: ['route'], buckets: BUCKETS, registers: [theirs] });
    for (const [route, v] of OBSERVED) {
      live.series(route).observe(v);
      reference.labels(route).observe(v);
    }
    const text = await ours.metrics();
    expect(text).toBe(await theirs.metrics());
    expect(text).toContain('req_seconds_bucket{le="0.001",route="/action"} 2');
    expect(text).toContain('req_seconds_count{route="/token"} 1');
    // The JSON form too (prom-client adds an empty exemplar to each line; we have none).
    type Line = { labels: object; value: number; metricName?: string };
    const plain = async (r: Registry) => (await r.getMetricsAsJSON()).map((m) => (m.values as Line[]).map(({ labels, value, metricName }) => ({ labels, value, metricName })));
    expect(await plain(ours)).toEqual(await plain(theirs));
  });

  it('starts afresh on resetMetrics', async () => {
    const ours = new Registry();
    const live = new HotPathHistogram(ours, 'h', 'h.', ['route'], BUCKETS);
    live.series('/a').observe(0.5);
    ours.resetMetrics();
    expect(await ours.metrics()).toContain('h_count{route="/a"} 0');
  });
});

describe('HotPathCounter', () => {
  it('renders the same text as a prom-client Counter, zero-valued series included', async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const live = new HotPathCounter(ours, 'actions_total', 'Actions.', ['type', 'result']);
    const reference = new Counter({ name: 'actions_total', help: 'Actions.', labelNames: ['type', 'result'], registers: [theirs] });
    live.series('Button', 'accepted').inc(0);
    reference.labels('Button', 'accepted').inc(0);
    const slider = live.series('Slider', 'accepted');
    for (let i = 0; i < 3; i++) {
      slider.inc();
      reference.labels('Slider', 'accepted').inc();
    }
    live.series('Slider', 'invalid_value').inc(2);
    reference.labels('Slider', 'invalid_value').inc(2);
    const text = await ours.metrics();
    expect(text).toBe(await theirs.metrics());
    expect(text).toContain('actions_total{type="Slider",result="accepted"} 3');
    // Scraping twice does not double count.
    expect(await ours.metrics()).toBe(text);
  });

  it('refuses a label set of the wrong size', () => {
    const live = new HotPathCounter(new Registry(), 'c_total', 'c.', ['a', 'b']);
    expect(() => live.series('only-one')).toThrow(/expected labels a, b/);
  });
});
