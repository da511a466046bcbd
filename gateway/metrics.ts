// The gateway's Prometheus metrics. Label values are bounded: routes are patterns, statuses and
// error codes come from closed sets, control types from the schema's enum; no layoutId, token or
// key label ever appears. The request path records through hot-path-metrics.ts (plain numbers,
// rendered by prom-client at scrape time); rare events use prom-client directly.
import { CLOSE } from '../schemas/live-protocol.js';
import { Counter, Gauge, Registry } from 'prom-client';
import { collectProcessMetrics } from '../runtime/ops-server.js';
import { CONTROL_TYPES } from '../schemas/types.js';
import { CLOCK_BUCKETS_MS } from './store/clock-figures.js';
import { HotPathCounter, HotPathHistogram, type CounterSeries, type HistogramSeries } from './hot-path-metrics.js';

const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];

export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly requests = new HotPathCounter(this.registry, 'audience_gateway_http_requests_total', 'HTTP requests answered, by route pattern and status.', ['route', 'status']);
  private readonly latency = new HotPathHistogram(this.registry, 'audience_gateway_http_request_duration_seconds', 'Time from a request arriving to its answer being written, by route pattern.', ['route'], LATENCY_BUCKETS);
  private readonly actions = new HotPathCounter(this.registry, 'audience_gateway_actions_total', 'POST /action outcomes: accepted, or the error code that rejected it, by control type.', ['type', 'result']);
  private readonly tokenCache = new HotPathCounter(this.registry, 'audience_gateway_token_cache_total', 'Verified-token cache lookups, by hit or miss.', ['result']);
  private readonly authFailures = new HotPathCounter(this.registry, 'audience_gateway_auth_failures_total', 'Rejected credentials, by kind (api_key or token) and error code.', ['kind', 'reason']);
  /** each phone's clock uncertainty as it reports it (live/clock-reports.ts), by layout and zone */
  readonly clockUncertainty = new HotPathHistogram(this.registry, 'audience_gateway_live_clock_uncertainty_seconds', "Phones' clock uncertainty as each reports it on a time exchange (half the least round trip its estimate uses), by layout and zone (* for a phone without one): how closely the phones start a light look together.", ['layout', 'zone'], CLOCK_BUCKETS_MS.map((ms) => ms / 1000));
  private readonly redisLatency = new HotPathHistogram(this.registry, 'audience_gateway_redis_command_duration_seconds', 'Redis commands on the request path, by command.', ['command'], LATENCY_BUCKETS);
  private readonly redisErrors = new HotPathCounter(this.registry, 'audience_gateway_redis_errors_total', 'Failed Redis commands on the request path, by command.', ['command']);
  readonly invalidations = new Counter({ name: 'audience_gateway_invalidations_applied_total', help: 'Control-plane changes applied from the invalidation channel: key_revoked, page_switch (layout change), key_created, signing_keys.', labelNames: ['kind'], registers: [this.registry] });

  readonly crowdEvictions = new Counter({ name: 'audience_gateway_crowd_evictions_total', help: 'Participants pushed out of a crowd window by CROWD_MAX_PARTICIPANTS (the one whose latest action is oldest leaves first).', registers: [this.registry] });
  private crowdParticipants: () => number = () => 0;
  readonly participantMoves = new Counter({ name: 'audience_gateway_participant_moves_total', help: 'Participants this process claimed from another gateway process (a reconnect, a renewal, a scale-up or a lost host moved them): each costs a few Redis commands and two messages.', registers: [this.registry] });
  readonly handoverTimeouts = new Counter({ name: 'audience_gateway_participant_handover_timeouts_total', help: 'Moves whose hand-over (crowd values, budget) did not come within 100 ms: the process left died, or its message was lost; the participant went on with what this process had.', registers: [this.registry] });
  readonly liveSkipped = new Counter({ name: 'audience_gateway_live_frames_skipped_total', help: 'Page and crowd frames skipped for a live socket over LIVE_BUFFER_BYTES (it gets the current state when it drains).', registers: [this.registry] });
  readonly liveCloses = new Counter({ name: 'audience_gateway_live_closes_total', help: `Live sockets the gateway closed, by close code (${Object.entries(CLOSE).filter(([name]) => name !== 'goingAway').map(([name, code]) => `${code} ${name}`).join(', ')}).`, labelNames: ['code'], registers: [this.registry] });
  readonly liveLostAtUpgrade = new Counter({ name: 'audience_gateway_live_lost_at_upgrade_total', help: 'Live sockets uWS closed (1006) inside an upgrade completed after an await, before the upgrade call returned (uNetworking/uWebSockets#1928); their clients reconnect. A client leaving is never counted.', registers: [this.registry] });
  private liveSockets: () => number = () => 0;
  /** LIVE_MAX_SOCKETS of this process (summed over workers, as the sockets are) */
  readonly liveSocketsLimit = new Gauge({ name: 'audience_gateway_live_sockets_limit', help: 'The live-channel sockets this process may hold (LIVE_MAX_SOCKETS; under workers, the sum of theirs): alert as live_sockets nears it.', registers: [this.registry] });
  readonly moderationRefused = new Counter({ name: 'audience_gateway_moderation_refused_total', help: 'Strings refused as moderated, by reason (blocklist, profanity, url, email, phone, too_long, muted).', labelNames: ['reason'], registers: [this.registry] });
  readonly moderationHeld = new Counter({ name: 'audience_gateway_moderation_held_total', help: 'Strings put in a moderation queue (mode hold).', registers: [this.registry] });
  readonly moderationDropped = new Counter({ name: 'audience_gateway_moderation_dropped_total', help: 'Held texts that left a moderation queue undecided, by reason: expired (MODERATION_HOLD_SECONDS), participant (past MODERATION_QUEUE_PER_PARTICIPANT), full (refused at the door, 429, while the queue held MODERATION_QUEUE_MAX).', labelNames: ['reason'], registers: [this.registry] });
  readonly moderationDecisions = new Counter({ name: 'audience_gateway_moderation_decisions_total', help: 'Moderation decisions made through this process (the team page), by decision: approve, reject, mute, unmute.', labelNames: ['decision'], registers: [this.registry] });

  /** Active signing keys this process cannot open, read at each scrape (the gauge is made in the constructor). */
  private unreadableKeys: () => number = () => 0;

  /** The active signing keys this process cannot open, read at each scrape. */
  watchSigningKeys(count: () => number): void {
    this.unreadableKeys = count;
  }

  /** The live sockets this process holds, read at each scrape. */
  watchLive(count: () => number): void {
    this.liveSockets = count;
  }

  /** The participants this process holds in crowd windows, read at each scrape. */
  watchCrowd(count: () => number): void {
    this.crowdParticipants = count;
  }

  /** The layouts in use here (sockets held, or asked for lately) and their registered displays, read at each scrape. */
  watchDestinations(inUse: () => Iterable<string>, count: (layoutId: string) => Promise<number>): void {
    this.destinationsInUse = inUse;
    this.destinationCount = count;
  }

  private destinationsInUse: () => Iterable<string> = () => [];
  private destinationCount: (layoutId: string) => Promise<number> = () => Promise.resolve(0);

  private readonly cacheHit = this.tokenCache.series('hit');
  private readonly cacheMiss = this.tokenCache.series('miss');

  /** POST /action outcomes by control type and result (`accepted` or an error code). */
  action(type: string, result: string): CounterSeries {
    return this.actions.series(type, result);
  }

  constructor() {
    collectProcessMetrics(this.registry, 'audience_gateway_');
    const participants = () => this.crowdParticipants();
    new Gauge({
      name: 'audience_gateway_crowd_participants',
      help: 'Participants this process holds in crowd windows, over every aggregated control (memory: see CROWD_MAX_PARTICIPANTS).',
      registers: [this.registry],
      collect() {
        this.set(participants());
      },
    });
    const unreadable = () => this.unreadableKeys();
    new Gauge({
      name: 'audience_gateway_signing_keys_unreadable',
      help: 'Active signing keys in Redis that this process cannot open with its SIGNING_KEK_FILE (sealed under another key-encryption key, or altered): tokens signed with them get 401 here. /readyz names them.',
      registers: [this.registry],
      collect() {
        this.set(unreadable());
      },
    });
    const sockets = () => this.liveSockets();
    new Gauge({
      name: 'audience_gateway_live_sockets',
      help: 'Live-channel sockets this process holds (at most LIVE_MAX_SOCKETS).',
      registers: [this.registry],
      collect() {
        this.set(sockets());
      },
    });
    const inUse = () => this.destinationsInUse();
    const destinations = (layoutId: string) => this.destinationCount(layoutId);
    new Gauge({
      name: 'audience_gateway_layout_destinations',
      help: "Displays the venue bridges register for each layout in use on this process (its live sockets, or asked for in the last 5 minutes): 0 while phones use a layout means no bridge plays it.",
      labelNames: ['layout'],
      registers: [this.registry],
      async collect() {
        const layouts = [...new Set(inUse())];
        // never rejects: a read Redis fails keeps the layout's last count (DestinationCounts)
        const counts = await Promise.all(layouts.map((l) => destinations(l)));
        this.reset();
        layouts.forEach((l, i) => this.labels(l).set(counts[i]!));
      },
    });
    // Pre-create the bounded label sets so dashboards see zeros rather than gaps.
    for (const t of CONTROL_TYPES) this.action(t, 'accepted').inc(0);
  }

  /** Each route pattern's latency series and answer counters by status, found without building a key. */
  private readonly byRoute = new Map<string, { latency: HistogramSeries; answers: Map<number, CounterSeries> }>();

  /** Called by the HTTP layer for every answer. */
  observeRequest(route: string, status: number, seconds: number, errorCode: string | null): void {
    let r = this.byRoute.get(route);
    if (!r) this.byRoute.set(route, (r = { latency: this.latency.series(route), answers: new Map() }));
    let answers = r.answers.get(status);
    if (!answers) r.answers.set(status, (answers = this.requests.series(route, String(status))));
    answers.inc();
    r.latency.observe(seconds);
    if (errorCode === null) return;
    if (errorCode.startsWith('api_key_')) this.authFailures.series('api_key', errorCode).inc();
    else if (errorCode.startsWith('token_')) this.authFailures.series('token', errorCode).inc();
  }

  tokenCacheLookup(hit: boolean): void {
    (hit ? this.cacheHit : this.cacheMiss).inc();
  }

  /** Times a Redis call on the request path. */
  redis<T>(command: string, p: Promise<T>): Promise<T> {
    const latency = this.redisLatency.series(command);
    const started = performance.now();
    return p.then(
      (v) => {
        latency.observe((performance.now() - started) / 1000);
        return v;
      },
      (e: unknown) => {
        latency.observe((performance.now() - started) / 1000);
        this.redisErrors.series(command).inc();
        throw e;
      },
    );
  }
}
