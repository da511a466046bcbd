// Bridge configuration: a JSON file (--config) or flags (--layout, --target...), both checked
// against schemas/bridge-config.schema.json with its defaults filled in, then frozen.
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { checkTlsSettings, parseClusterNodes, type RedisTarget } from '../runtime/redis.js';
import { redisTlsFromEnv, RedisTlsError, type RedisTlsFiles } from '../runtime/redis-tls.js';
import type { ErrorObject } from 'ajv';
import { bridgeConfig as validate } from '../schemas/generated/defaults.js';
import { jsonPointerToPath } from '../schemas/validators.js';
import type { BooleanMode } from './osc.js';
import { routeProblems, type RouteConfig, type Unrouted } from './routes.js';
import { dmxRouteProblems, type DmxRouteConfig } from './dmx/dmx-routes.js';
import { dmxTargetName } from './dmx/names.js';
import { targetName } from './sender.js';
import type { TcpFraming } from './tcp-target.js';

export interface BridgeTarget {
  readonly host: string;
  readonly port: number;
  readonly booleans: BooleanMode;
  /** this target's own addresses and values (bridge/routes.ts) */
  readonly routes?: readonly RouteConfig[];
  readonly unrouted: Unrouted;
  /** udp, or OSC over TCP framed by length (tcp) or SLIP (tcp-slip) */
  readonly transport: 'udp' | TcpFraming;
}

/** A DMX universe a layout plays (bridge/dmx): its wire, rate, staleness and channel routes. */
export interface DmxTarget {
  readonly transport: 'sacn' | 'artnet';
  /** sacn: 1 to 63999; artnet: the 15-bit port-address */
  readonly universe: number;
  readonly priority: number;
  readonly sourceName: string;
  readonly address?: string;
  readonly interface?: string;
  readonly rateHz: number;
  readonly staleMs: number;
  readonly routes: readonly DmxRouteConfig[];
}

export interface BridgeLayout {
  readonly layoutId: string;
  /** its OSC targets (a layout may have none when it has DMX ones) */
  readonly targets: readonly BridgeTarget[];
  /** its DMX targets (the targets with transport sacn or artnet) */
  readonly dmxTargets: readonly DmxTarget[];
  readonly tickHz: number;
  readonly playoutDelayMs: number;
  readonly maxAgeMs: number;
  readonly maxMessagesPerTick: number;
  /** the UDP port of its light OSC input (bridge/light-in.ts); absent: none */
  readonly lightOscPort?: number;
}

export interface BridgeConfig {
  readonly bridgeId: string;
  readonly redisUrl: string;
  /** seed nodes of a Redis Cluster; absent: one server at redisUrl */
  readonly redisClusterNodes?: readonly string[];
  /** TLS to Redis (rediss://): the config file's redisTls, else REDIS_TLS_* */
  readonly redisTls?: RedisTlsFiles;
  readonly redisPrefix: string;
  readonly presenceTtlMs: number;
  /** the host's clock further than this from Redis's is said (readyz note, STATUS, log); 0: never */
  readonly clockOffsetWarnMs: number;
  readonly logLevel: string;
  readonly opsPort: number;
  readonly opsHost: string;
  /** the CPU the event loop and the tick clock keep to (thread-priority.ts); absent: no pinning */
  readonly sendCpu?: number;
  /** the OSCQuery server's port (bridge/oscquery); absent: none */
  readonly oscQueryPort?: number;
  readonly oscQueryHost: string;
  /** Host header names taken besides loopback, IP addresses and this machine's names */
  readonly oscQueryAllowedHosts: readonly string[];
  /** Origin headers taken besides loopback origins */
  readonly oscQueryAllowedOrigins: readonly string[];
  /** advertise it over mDNS; absent: when oscQueryHost is not loopback */
  readonly oscQueryMdns?: boolean;
  /** the address the light OSC ports listen on */
  readonly lightOscHost: string;
  /** the lighting desk's sACN input (bridge/light-dmx.ts); absent: none */
  readonly sacn?: { readonly port: number; readonly interface?: string };
  readonly layouts: readonly BridgeLayout[];
}

export class BridgeConfigError extends Error {
  override name = 'BridgeConfigError';
}

/** What the command line said. */
export interface BridgeFlags {
  config?: string;
  layout?: string;
  target?: string[];
  redis?: string;
  redisClusterNodes?: string;
  bridgeId?: string;
  tickHz?: string;
  playoutDelayMs?: string;
  maxAgeMs?: string;
  booleans?: string;
  opsPort?: string;
  sendCpu?: string;
  oscQueryPort?: string;
}

/** "host:port", "[v6]:port" -> {host, port}; the port stays a string if it is not a number, for the schema to name. */
export function parseTarget(text: string): { host: string; port: number } {
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(text) ?? /^([^:]+):(\d+)$/.exec(text);
  if (!m) throw new BridgeConfigError(`--target ${JSON.stringify(text)} is not HOST:PORT`);
  return { host: m[1]!, port: Number(m[2]) };
}

function fromFlags(f: BridgeFlags): Record<string, unknown> {
  if (!f.layout) throw new BridgeConfigError('give --config FILE, or --layout ID with at least one --target HOST:PORT');
  if (!f.target?.length) throw new BridgeConfigError('--layout needs at least one --target HOST:PORT');
  const num = (v: string | undefined, flag: string) => {
    if (v === undefined) return undefined;
    if (!/^\d+$/.test(v)) throw new BridgeConfigError(`${flag} must be a whole number, not ${JSON.stringify(v)}`);
    return Number(v);
  };
  const layout: Record<string, unknown> = {
    layoutId: f.layout,
    targets: f.target.map((t) => ({ ...parseTarget(t), ...(f.booleans !== undefined && { booleans: f.booleans }) })),
  };
  for (const [key, flag, v] of [
    ['tickHz', '--tick-hz', f.tickHz],
    ['playoutDelayMs', '--playout-delay-ms', f.playoutDelayMs],
    ['maxAgeMs', '--max-age-ms', f.maxAgeMs],
  ] as const) {
    const n = num(v, flag);
    if (n !== undefined) layout[key] = n;
  }
  return { layouts: [layout] };
}

export function loadBridgeConfig(flags: BridgeFlags, env: NodeJS.ProcessEnv = process.env): BridgeConfig {
  let raw: Record<string, unknown>;
  if (flags.config) {
    if (flags.layout || flags.target) throw new BridgeConfigError('give either --config or --layout/--target, not both');
    let text: string;
    try {
      text = readFileSync(flags.config, 'utf8');
    } catch (e) {
      throw new BridgeConfigError(`cannot read ${flags.config}: ${(e as Error).message}`);
    }
    try {
      raw = JSON.parse(text) as Record<string, unknown>;
    } catch (e) {
      throw new BridgeConfigError(`${flags.config} is not valid JSON (${jsonErrorPlace(text, (e as Error).message)}): ${(e as Error).message}`);
    }
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new BridgeConfigError(`${flags.config} must hold a JSON object`);
  } else {
    raw = fromFlags(flags);
  }
  if (flags.redis) raw.redisUrl = flags.redis;
  raw.redisUrl ??= env.REDIS_URL || 'redis://127.0.0.1:6379';
  const nodes = parseClusterNodes(flags.redisClusterNodes ?? env.REDIS_CLUSTER_NODES);
  if (nodes) raw.redisClusterNodes = nodes;
  if (flags.bridgeId) raw.bridgeId = flags.bridgeId;
  for (const [key, flag, v] of [
    ['opsPort', '--ops-port', flags.opsPort],
    ['sendCpu', '--send-cpu', flags.sendCpu],
    ['oscQueryPort', '--osc-query-port', flags.oscQueryPort],
  ] as const) {
    if (v === undefined) continue;
    if (!/^\d+$/.test(v)) throw new BridgeConfigError(`${flag} must be a whole number, not ${JSON.stringify(v)}`);
    raw[key] = Number(v);
  }
  raw.bridgeId ??= hostname().replace(/[^A-Za-z0-9_.-]/g, '-').slice(0, 64) || 'bridge';
  if (env.REDIS_PREFIX !== undefined && raw.redisPrefix === undefined) raw.redisPrefix = env.REDIS_PREFIX;
  if (env.LOG_LEVEL) raw.logLevel = env.LOG_LEVEL;
  const tlsFromEnv = redisTlsFromEnv(env);
  if (raw.redisTls === undefined && tlsFromEnv) raw.redisTls = tlsFromEnv;

  if (!validate(raw)) throw new BridgeConfigError(`${whichTarget(raw, validate.errors?.[0]?.instancePath ?? '')}${inWords(validate.errors?.[0])}`);
  splitDmxTargets(raw.layouts as Record<string, unknown>[]);
  for (const layout of raw.layouts as BridgeLayout[]) {
    for (const target of layout.targets) {
      const problem = routeProblems(target.routes ?? [])[0];
      if (problem) throw new BridgeConfigError(`layout ${layout.layoutId}, target ${targetName(target)}, ${problem}`);
    }
    for (const target of layout.dmxTargets) {
      const problem = dmxRouteProblems(target.routes)[0];
      if (problem) throw new BridgeConfigError(`layout ${layout.layoutId}, target ${dmxTargetName(target)}, ${problem}`);
    }
  }
  const universes = new Map<string, string>();
  for (const layout of raw.layouts as BridgeLayout[]) {
    for (const target of layout.dmxTargets) {
      const name = dmxTargetName(target);
      const other = universes.get(name);
      if (other) throw new BridgeConfigError(`layout ${layout.layoutId}, target ${name}: the same universe is also a target of layout ${other}; one source sends a universe once`);
      universes.set(name, layout.layoutId);
    }
  }
  if (raw.oscQueryPort !== undefined && (raw.layouts as BridgeLayout[]).every((l) => l.targets.length === 0)) throw new BridgeConfigError('oscQueryPort: OSCQuery describes OSC targets, and no layout has one');
  const ids = (raw.layouts as { layoutId: string }[]).map((l) => l.layoutId);
  const dup = ids.find((id, i) => ids.indexOf(id) !== i);
  if (dup) throw new BridgeConfigError(`layout "${dup}" appears twice`);
  const config = deepFreeze(raw) as unknown as BridgeConfig;
  try {
    checkTlsSettings(bridgeRedisTarget(config));
  } catch (e) {
    if (e instanceof RedisTlsError) throw new BridgeConfigError(e.message);
    throw e;
  }
  return config;
}

/** OSC keys a DMX target may not have, and DMX keys an OSC target may not have. */
const OSC_ONLY = ['host', 'port', 'booleans', 'unrouted'] as const;
const DMX_ONLY = ['universe', 'priority', 'sourceName', 'address', 'interface', 'rateHz', 'staleMs'] as const;

/**
 * Moves each layout's DMX targets (transport sacn or artnet) from `targets` to `dmxTargets`, after
 * the schema (its defaults filled in for both kinds); a key of the other kind is refused, naming it.
 */
function splitDmxTargets(layouts: Record<string, unknown>[]): void {
  for (const layout of layouts) {
    const all = layout.targets as Record<string, unknown>[];
    const dmx = all.filter((t) => t.transport === 'sacn' || t.transport === 'artnet');
    const osc = all.filter((t) => !dmx.includes(t));
    for (const t of dmx) {
      const wrong = OSC_ONLY.find((k) => k in t);
      if (wrong) throw new BridgeConfigError(`layout ${String(layout.layoutId)}, a ${String(t.transport)} target: "${wrong}" is for OSC targets (a DMX target sends to address, or multicast or broadcast)`);
      if (t.transport === 'sacn' && (t.universe as number) < 1) throw new BridgeConfigError(`layout ${String(layout.layoutId)}, target sacn:${String(t.universe)}: an sACN universe is 1 to 63999`);
      if (t.transport === 'artnet') {
        const u = t.universe as number | { net: number; subnet: number; universe: number };
        if (typeof u === 'number' && u > 32767) throw new BridgeConfigError(`layout ${String(layout.layoutId)}, target artnet:${u}: an Art-Net port-address is 0 to 32767`);
        t.universe = typeof u === 'number' ? u : (u.net << 8) | (u.subnet << 4) | u.universe;
      }
      t.routes ??= [];
    }
    for (const t of osc) {
      const wrong = DMX_ONLY.find((k) => k in t);
      if (wrong) throw new BridgeConfigError(`layout ${String(layout.layoutId)}, target ${String(t.host)}:${String(t.port)}: "${wrong}" is for DMX targets (transport sacn or artnet)`);
    }
    layout.targets = osc;
    layout.dmxTargets = dmx;
  }
}

/** "layout L, target H:P: " for an error inside a target (its list place alone says little), else "". */
function whichTarget(raw: Record<string, unknown>, pointer: string): string {
  const m = /^\/layouts\/(\d+)\/targets\/(\d+)\//.exec(pointer);
  if (!m) return '';
  const layout = (raw.layouts as { layoutId?: unknown; targets?: { host?: unknown; port?: unknown }[] }[])[Number(m[1])];
  const target = layout?.targets?.[Number(m[2])];
  return `layout ${String(layout?.layoutId)}, target ${String(target?.host)}:${String(target?.port)}: `;
}

/** "line L, column C" of a JSON.parse error: from the position it names, else the end of the text. */
export function jsonErrorPlace(text: string, message: string): string {
  const given = /line (\d+) column (\d+)/.exec(message);
  if (given) return `line ${given[1]}, column ${given[2]}`;
  const position = /position (\d+)/.exec(message);
  const at = position ? Number(position[1]) : text.length;
  const before = text.slice(0, at).split('\n');
  return `line ${before.length}, column ${before[before.length - 1]!.length + 1}`;
}

/** What a list of each key holds, for "must list at least 1 target". */
const ITEM_NOUN: Record<string, string> = { layouts: 'layout', targets: 'target', redisClusterNodes: 'node' };

/** The first schema error as a sentence: the key's path, and what is allowed, in words. */
function inWords(e: ErrorObject | undefined): string {
  if (!e) return 'the configuration is invalid';
  const at = jsonPointerToPath(e.instancePath) || '(top level)';
  const p = e.params as Record<string, unknown>;
  const key = at.replace(/\[\d+\]$/, '').split('.').at(-1) ?? at;
  switch (e.keyword) {
    case 'additionalProperties':
      return `${at === '(top level)' ? '' : `${at}: `}unknown key "${String(p.additionalProperty)}"`;
    case 'required':
      return `${at}: missing "${String(p.missingProperty)}"`;
    case 'minItems':
      return `${at} must list at least ${String(p.limit)} ${ITEM_NOUN[key] ?? 'item'}${p.limit === 1 ? '' : 's'}`;
    case 'maxItems':
      return `${at} may list at most ${String(p.limit)} ${ITEM_NOUN[key] ?? 'item'}s`;
    case 'minimum':
      return `${at} must be at least ${String(p.limit)}`;
    case 'maximum':
      return `${at} must be at most ${String(p.limit)}`;
    case 'enum':
      return `${at} must be one of: ${(p.allowedValues as unknown[]).join(', ')}`;
    case 'type':
      return `${at} must be ${p.type === 'integer' ? 'a whole number' : p.type === 'array' ? 'a list' : p.type === 'object' ? 'an object' : `a ${String(p.type)}`}`;
    case 'pattern':
      return `${at} has characters it may not have (allowed: ${String(p.pattern)})`;
    case 'minLength':
      return `${at} must not be empty`;
    case 'maxLength':
      return `${at} must be at most ${String(p.limit)} characters`;
    default:
      return `${at} ${e.message ?? 'is invalid'}`;
  }
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object') {
    for (const v of Object.values(o)) deepFreeze(v);
    Object.freeze(o);
  }
  return o;
}

/** Where the bridge's Redis is: the cluster's seed nodes when given, else the URL. */
export function bridgeRedisTarget(c: Pick<BridgeConfig, 'redisUrl' | 'redisClusterNodes' | 'redisTls'>): RedisTarget {
  return { url: c.redisUrl, clusterNodes: c.redisClusterNodes, ...(c.redisTls && { tls: c.redisTls }) };
}
