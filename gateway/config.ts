// Gateway configuration: environment -> object checked against schemas/gateway-config.schema.json, frozen.
// Each key is declared once in that schema with its default, its environment variable and its trade-off.
import { TrustedProxies } from './http/client-address.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkTlsSettings, parseClusterNodes, type RedisTarget } from '../runtime/redis.js';
import { hasTlsSettings, RedisTlsError } from '../runtime/redis-tls.js';
import { gatewayConfig as validateConfig } from '../schemas/generated/coerce.js';
import { SCHEMA_DIR } from '../schemas/schema-dir.js';

export interface GatewayConfig {
  readonly port: number;
  readonly host: string;
  readonly redisUrl: string;
  /** comma-separated seed nodes; empty: one server at redisUrl */
  readonly redisClusterNodes: string;
  readonly redisPrefix: string;
  /** the key-encryption key of the signing secrets (required by the gateway; see store/signing-kek.ts) */
  readonly signingKekFile: string;
  /** TLS to Redis (rediss://): empty strings are unset */
  readonly redisTlsCaFile: string;
  readonly redisTlsCertFile: string;
  readonly redisTlsKeyFile: string;
  readonly redisTlsServername: string;
  /** "1".."99" or "auto" */
  readonly gatewayWorkers: string;
  readonly redisCommandTimeoutMs: number;
  readonly clockOffsetWarnMs: number;
  readonly tokenTtlSeconds: number;
  readonly tokenRenewGraceSeconds: number;
  readonly tokenIssuer: string;
  readonly tokenAudience: string;
  readonly tokenCacheMax: number;
  readonly cacheRecheckMs: number;
  readonly idempotencyTtlSeconds: number;
  readonly idempotencyKeysPerParticipant: number;
  readonly actionRatePerSecond: number;
  readonly actionBurst: number;
  readonly stringRatePerSecond: number;
  readonly stringBurst: number;
  readonly participantsTracked: number;
  readonly mintRatePerSecond: number;
  readonly mintBurst: number;
  readonly corsOrigins: string;
  readonly crowdFoldMs: number;
  readonly crowdMaxParticipants: number;
  readonly liveMaxSockets: number;
  readonly liveNewSocketsPerSecond: number;
  readonly liveBufferBytes: number;
  readonly liveSlowCloseMs: number;
  readonly liveIdleTimeoutSeconds: number;
  readonly liveExpiryNoticeSeconds: number;
  readonly liveSocketsPerParticipant: number;
  readonly liveOpensPerParticipantPerMinute: number;
  readonly liveRefusedUpgradesPerAddressPerSecond: number;
  readonly liveDrainMs: number;
  readonly streamMaxLen: number;
  readonly streamRetentionSeconds: number;
  readonly moderationQueueMax: number;
  readonly moderationQueuePerParticipant: number;
  readonly moderationHoldSeconds: number;
  readonly showRecordRetentionSeconds: number;
  readonly showRecordMaxBytes: number;
  readonly redisMemoryReadyShare: number;
  readonly maxBodyBytes: number;
  readonly adminSessionIdleSeconds: number;
  readonly adminSessionMaxSeconds: number;
  readonly adminLoginWindowSeconds: number;
  readonly adminLoginMaxPerAccount: number;
  readonly adminLoginMaxPerAddress: number;
  readonly adminLoginMaxInFlight: number;
  readonly adminSecureCookie: 'auto' | 'always' | 'never';
  /** TRUST_PROXY as written: the load balancer's addresses and networks (http/client-address.ts parses it) */
  readonly trustProxy: string;
  readonly opsPort: number;
  readonly opsHost: string;
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
}

interface PropertySchema {
  'x-env': string;
  default: unknown;
  description: string;
}

const SCHEMA_ID = 'gateway-config.schema.json';

/** The declared settings: key -> {x-env, default, description}. */
export function configProperties(): Record<string, PropertySchema> {
  const schema = JSON.parse(readFileSync(join(SCHEMA_DIR, SCHEMA_ID), 'utf8')) as { properties: Record<string, PropertySchema> };
  return schema.properties;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * Builds the configuration from environment variables plus explicit overrides (tests, embedders).
 * Unknown override keys and bad values throw a ConfigError naming the key and its variable.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<GatewayConfig> = {}): GatewayConfig {
  const props = configProperties();
  const raw: Record<string, unknown> = {};
  for (const [key, prop] of Object.entries(props)) {
    const v = env[prop['x-env']];
    if (v !== undefined && v !== '') raw[key] = v;
  }
  Object.assign(raw, overrides);
  if (!validateConfig(raw)) {
    const e = validateConfig.errors?.[0];
    const key = e?.keyword === 'additionalProperties' ? String(e.params.additionalProperty) : (e?.instancePath.slice(1) ?? '');
    const envName = props[key]?.['x-env'];
    const where = envName ? `${key} (${envName})` : key;
    throw new ConfigError(`invalid configuration: ${where} ${e?.keyword === 'additionalProperties' ? 'is not a setting' : (e?.message ?? 'is invalid')}`);
  }
  const config = Object.freeze(raw) as unknown as GatewayConfig;
  try {
    TrustedProxies.parse(config.trustProxy);
  } catch (e) {
    throw new ConfigError(`invalid configuration: trustProxy (TRUST_PROXY) ${(e as Error).message}`);
  }
  try {
    checkTlsSettings(redisTarget(config));
  } catch (e) {
    if (e instanceof RedisTlsError) throw new ConfigError(`invalid configuration: ${e.message}`);
    throw e;
  }
  return config;
}

/** Where the configured Redis is: the cluster's seed nodes when REDIS_CLUSTER_NODES is set, else REDIS_URL. */
export function redisTarget(c: Pick<GatewayConfig, 'redisUrl' | 'redisClusterNodes' | 'redisTlsCaFile' | 'redisTlsCertFile' | 'redisTlsKeyFile' | 'redisTlsServername'>): RedisTarget {
  const tls = { caFile: c.redisTlsCaFile || undefined, certFile: c.redisTlsCertFile || undefined, keyFile: c.redisTlsKeyFile || undefined, servername: c.redisTlsServername || undefined };
  return { url: c.redisUrl, clusterNodes: parseClusterNodes(c.redisClusterNodes), ...(hasTlsSettings(tls) && { tls }) };
}

/** The show record's bounds of a configuration, as the stores take them. */
export function recordBounds(c: Pick<GatewayConfig, 'showRecordRetentionSeconds' | 'showRecordMaxBytes'>): { retentionMs: number; maxBytes: number } {
  return { retentionMs: c.showRecordRetentionSeconds * 1000, maxBytes: c.showRecordMaxBytes };
}
