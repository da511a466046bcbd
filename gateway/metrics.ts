// The gateway's Prometheus metrics. Label values are bounded: routes are patterns, statuses and
// error codes come from closed sets, control types from the schema's enum; no layoutId, token or
// key label ever appears.
import { Counter, Histogram, Registry } from 'prom-client';
import { collectProcessMetrics } from '../bridge/ops-server.js';
import { CONTROL_TYPES } from '../schemas/types.js';

const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];

export class GatewayMetrics {
  readonly registry = new Registry();
  readonly requests = new Counter({ name: 'audience_gateway_http_requests_total', help: 'HTTP requests answered, by route pattern and status.', labelNames: ['route', 'status'], registers: [this.registry] });
  readonly latency = new Histogram({ name: 'audience_gateway_http_request_duration_seconds', help: 'Time from a request arriving to its answer being written, by route pattern.', labelNames: ['route'], buckets: LATENCY_BUCKETS, registers: [this.registry] });
  readonly actions = new Counter({ name: 'audience_gateway_actions_total', help: 'POST /action outcomes: accepted, or the error code that rejected it, by control type.', labelNames: ['type', 'result'], registers: [this.registry] });
  readonly tokenCache = new Counter({ name: 'audience_gateway_token_cache_total', help: 'Verified-token cache lookups, by hit or miss.', labelNames: ['result'], registers: [this.registry] });
  readonly authFailures = new Counter({ name: 'audience_gateway_auth_failures_total', help: 'Rejected credentials, by kind (api_key or token) and error code.', labelNames: ['kind', 'reason'], registers: [this.registry] });
  readonly redisLatency = new Histogram({ name: 'audience_gateway_redis_command_duration_seconds', help: 'Redis commands on the request path, by command.', labelNames: ['command'], buckets: LATENCY_BUCKETS, registers: [this.registry] });
  readonly redisErrors = new Counter({ name: 'audience_gateway_redis_errors_total', help: 'Failed Redis commands on the request path, by command.', labelNames: ['command'], registers: [this.registry] });
  readonly invalidations = new Counter({ name: 'audience_gateway_invalidations_applied_total', help: 'Control-plane changes applied from the invalidation channel: key_revoked, page_switch (layout change), key_created, signing_keys.', labelNames: ['kind'], registers: [this.registry] });

  constructor() {
    collectProcessMetrics(this.registry, 'audience_gateway_');
    // Pre-create the bounded label sets so dashboards see zeros rather than gaps.
    for (const t of CONTROL_TYPES) this.actions.labels(t, 'accepted').inc(0);
    for (const r of ['hit', 'miss']) this.tokenCache.labels(r).inc(0);
  }

  /** Called by the HTTP layer for every answer. */
  observeRequest(route: string, status: number, seconds: number, errorCode: string | null): void {
    this.requests.labels(route, String(status)).inc();
    this.latency.labels(route).observe(seconds);
    if (errorCode?.startsWith('api_key_')) this.authFailures.labels('api_key', errorCode).inc();
    else if (errorCode?.startsWith('token_')) this.authFailures.labels('token', errorCode).inc();
  }

  /** Times a Redis call on the request path. */
  async redis<T>(command: string, p: Promise<T>): Promise<T> {
    const end = this.redisLatency.labels(command).startTimer();
    try {
      return await p;
    } catch (e) {
      this.redisErrors.labels(command).inc();
      throw e;
    } finally {
      end();
    }
  }
}
