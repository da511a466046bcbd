// Both processes' ops endpoints: /metrics passes `promtool check metrics` (Debian's prometheus
// package), carries the documented series with bounded labels; /healthz and /readyz tell the truth.
import { execFile } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { useBridgeWithSink } from '../helpers/bridge.js';
import { eventually, postAction, postJson, startTestGateway, useGatewayWithToken } from '../helpers/gateway.js';
import { bridgeOutcomes, sample, scrape } from '../helpers/metrics.js';
import { useRedis } from '../helpers/redis.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

const redis = useRedis();
const g = useGatewayWithToken(() => redis.get().server.url);

function promtool(text: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    const p = execFile('promtool', ['check', 'metrics'], { timeout: 20_000 }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }));
    p.stdin!.end(text);
  });
}


describe('gateway ops endpoints', () => {
  it('serves metrics that promtool accepts, counting what happened', async () => {
    await postAction(g.t, g.token, { layoutId: g.t.layoutId, lid: 2, type: 'Slider', value: 0.5 });
    await postAction(g.t, g.token, { layoutId: g.t.layoutId, lid: 2, type: 'Slider', value: 0.6 });
    await postAction(g.t, g.token, { layoutId: g.t.layoutId, lid: 2, type: 'Slider', value: 7 });
    await postAction(g.t, 'forged', { layoutId: g.t.layoutId, lid: 1, type: 'Button' });
    await postJson(`${g.t.url}/token`, { layoutId: g.t.layoutId }, { 'x-api-key': 'nope' });
    const text = await scrape(g.t.gw.opsPort);
    const lint = await promtool(text);
    expect(lint.out.trim()).toBe('');
    expect(lint.code).toBe(0);
    expect(sample(text, 'audience_gateway_actions_total{type="Slider",result="accepted"}')).toBe(2);
    expect(sample(text, 'audience_gateway_actions_total{type="Slider",result="invalid_value"}')).toBe(1);
    expect(sample(text, 'audience_gateway_auth_failures_total{kind="token",reason="token_invalid"}')).toBe(1);
    expect(sample(text, 'audience_gateway_auth_failures_total{kind="api_key",reason="api_key_invalid"}')).toBe(1);
    expect(sample(text, 'audience_gateway_token_cache_total{result="hit"}')).toBeGreaterThanOrEqual(2);
    expect(sample(text, 'audience_gateway_http_requests_total{route="/action",status="200"}')).toBe(2);
    expect(sample(text, 'audience_gateway_redis_command_duration_seconds_count{command="append_actions"}')).toBe(2);
    expect(text).toMatch(/^audience_gateway_http_request_duration_seconds_bucket\{le="0.005",route="\/action"\} \d+$/m);
    expect(text).toContain('audience_gateway_process_resident_memory_bytes');
    expect(text).not.toContain(g.t.layoutId); // no layout labels
    expect(text).not.toContain(g.token.slice(0, 20)); // no token labels
  });

  it('counts revocations and page switches applied', async () => {
    await g.t.admin.layouts.activate(g.t.layoutId, 'encore');
    await g.t.admin.layouts.activate(g.t.layoutId, 'main');
    await eventually(async () => sample(await scrape(g.t.gw.opsPort), 'audience_gateway_invalidations_applied_total{kind="page_switch"}') >= 2);
  });

  it('/healthz says alive; /readyz follows Redis', async () => {
    const proxy = new TcpProxy(redis.get().server.port);
    await proxy.start();
    const t = await startTestGateway({ redisUrl: `redis://127.0.0.1:${proxy.port}` });
    try {
      expect((await fetch(`http://127.0.0.1:${t.gw.opsPort}/healthz`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${t.gw.opsPort}/readyz`)).status).toBe(200);
      proxy.hold();
      const r = await fetch(`http://127.0.0.1:${t.gw.opsPort}/readyz`);
      expect(r.status).toBe(503);
      expect(await r.text()).toContain('Redis unreachable');
      expect((await fetch(`http://127.0.0.1:${t.gw.opsPort}/healthz`)).status).toBe(200);
      proxy.release();
      await eventually(async () => (await fetch(`http://127.0.0.1:${t.gw.opsPort}/readyz`)).status === 200);
    } finally {
      await t.close();
      await proxy.stop();
    }
  });
});

describe('bridge ops endpoints', () => {
  const b = useBridgeWithSink(() => redis.get().server.url, () => ({ prefix: g.t.config.redisPrefix, layoutId: g.t.layoutId }));

  it('serves metrics that promtool accepts, counting what was sent', async () => {
    for (let i = 0; i < 3; i++) await postAction(g.t, g.token, { layoutId: g.t.layoutId, lid: 1, type: 'Button' });
    await eventually(() => b.sink.messages.length >= 3);
    const text = await scrape(b.bridge.opsPort);
    const lint = await promtool(text);
    expect(lint.out.trim()).toBe('');
    expect(lint.code).toBe(0);
    const target = `127.0.0.1:${b.sink.port}`;
    expect(sample(text, `audience_bridge_messages_sent_total{target="${target}"}`)).toBeGreaterThanOrEqual(3);
    expect(sample(text, `audience_bridge_bytes_sent_total{target="${target}"}`)).toBeGreaterThan(0);
    const layout = `{layout="${g.t.layoutId}"}`;
    expect(sample(text, `audience_bridge_entries_read_total${layout}`)).toBeGreaterThanOrEqual(3);
    const outcomes = bridgeOutcomes(text, g.t.layoutId); // read = sent + coalesced + duplicates + dead-lettered + stale + lost + pending
    expect(outcomes.sum).toBe(outcomes.read);
    expect(sample(text, `audience_bridge_consumer_lag_entries{layout="${g.t.layoutId}"}`)).toBe(0);
    expect(sample(text, `audience_bridge_consumer_lag_seconds{layout="${g.t.layoutId}"}`)).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'audience_bridge_tick_lateness_seconds_count')).toBeGreaterThan(0);
    expect(sample(text, 'audience_bridge_heartbeat_age_seconds')).toBeLessThan(10);
  });

  it('/readyz says ready once its groups exist', async () => {
    expect((await fetch(`http://127.0.0.1:${b.bridge.opsPort}/readyz`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${b.bridge.opsPort}/healthz`)).status).toBe(200);
  });
});
