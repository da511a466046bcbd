// What the route handlers need, built once by app.ts.
import type { ActionLog } from '../actions/action-log.js';
import type { CrowdFold } from '../crowd/crowd-fold.js';
import type { ParticipantClaims } from '../actions/participant-claims.js';
import type { ApiKeyAuth } from '../auth/api-keys.js';
import type { AudienceTokens } from '../auth/audience-tokens.js';
import type { CorsPolicy } from '../http/cors.js';
import type { DestinationCounts } from '../layouts/destinations.js';
import type { LayoutCache } from '../layouts/layout-cache.js';
import type { ActionRates, MintLimits, ParticipantLimits } from '../limits/participant-limits.js';
import type { GatewayMetrics } from '../metrics.js';
import type { TextModeration } from '../moderation/moderation.js';
import type { RedisKeys } from '../store/keys.js';

export interface RouteDeps {
  apiKeys: ApiKeyAuth;
  tokens: AudienceTokens;
  layouts: LayoutCache;
  destinations: DestinationCounts;
  actions: ActionLog;
  /** crowd aggregation: the fold of aggregated controls */
  crowd: CrowdFold;
  cors: CorsPolicy;
  metrics: GatewayMetrics;
  /** Redis key names (the Idempotency-Key records) */
  keys: RedisKeys;
  /** Idempotency-Key: the window a key is remembered for (at least; at most two), and the keys a participant may use in one */
  idempotency: { windowSeconds: number; keysPerParticipant: number };
  /** what one participant may send (its budget lives in the process that holds it) */
  participants: ParticipantLimits;
  /** which process holds each participant (told of every action the budget took) */
  claims: Pick<ParticipantClaims, 'acquire' | 'seen'>;
  /** the gateway's default per-participant rates (a layout's `limits` override them) */
  actionRates: ActionRates;
  /** String moderation: refusals, muted participants, the hold queue */
  moderation: TextModeration;
  /** what one API key may mint (per process) */
  mints: MintLimits;
}
