// A least-privilege Redis user for one venue bridge: `bridge-<ID>` may touch only its layouts'
// action streams, presence sets, dead-letter streams, cue hashes and show records, with only the commands the
// bridge sends (reading its consumer group, acking, dead-lettering, its two scripts, presence, cue
// state, the clock), and read-only its layouts' definitions (OSCQuery describes their controls).
// Nothing else: no signing keys, API keys, teams, admin sessions, writes to a definition or another
// layout's keys, no pub/sub, no admin commands. On Redis Cluster the user is
// set on every node, masters and replicas, since ACLs are per node.
import { randomBytes } from 'node:crypto';
import { Cluster, type Redis } from 'ioredis';
import type { RedisClient } from '../../runtime/redis.js';
import { actionStreamKey, cueStateKey, deadLetterKey, layoutKey, presenceKey, showRecordKey, showRecordStateKey } from '../../schemas/redis-keys.js';
import { AppError } from '../errors.js';

/**
 * The commands a bridge sends, each needed: the connection (ioredis: AUTH/HELLO, CLIENT SETNAME,
 * the INFO ready check, the cluster's slot map), its consumer group (XREADGROUP, XACK, XAUTOCLAIM,
 * XINFO, XGROUP CREATE and SETID, XRANGE in the lost-entry count, XPENDING), dead letters (XADD),
 * its scripts (EVAL, EVALSHA: the lost-entry count, the cue firing and the crowd samples, which
 * also append to the show record: XDEL, HINCRBY, HMGET), presence (ZADD, ZREMRANGEBYSCORE, PEXPIRE,
 * ZREM), cue state (HGETALL, HGET, HSET), its layouts' definitions (HMGET, HGET) and the server's
 * clock (TIME).
 */
export const BRIDGE_COMMANDS = [
  'auth', 'hello', 'ping', 'quit', 'select', 'info', 'time', 'readonly',
  'client|setname', 'client|setinfo', 'client|id', 'cluster|slots', 'cluster|shards', 'cluster|nodes', 'cluster|info',
  'xreadgroup', 'xack', 'xautoclaim', 'xinfo|groups', 'xinfo|stream', 'xgroup|create', 'xgroup|setid', 'xrange', 'xpending', 'xadd',
  'eval', 'evalsha',
  'zadd', 'zremrangebyscore', 'pexpire', 'zrem',
  'hgetall', 'hget', 'hset',
  'xdel', 'hincrby', 'hmget',
] as const;

const BRIDGE_ID = /^[A-Za-z0-9_.-]{1,64}$/;
const LAYOUT_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The Redis user of a bridge. */
export function bridgeUser(bridgeId: string): string {
  return `bridge-${bridgeId}`;
}

/** The keys a bridge may touch: six per layout, named exactly (no pattern reaches another layout's). */
export function bridgeKeys(prefix: string, layoutIds: readonly string[]): string[] {
  return layoutIds.flatMap((l) => [actionStreamKey(prefix, l), presenceKey(prefix, l), deadLetterKey(prefix, l), cueStateKey(prefix, l), showRecordKey(prefix, l), showRecordStateKey(prefix, l)]);
}

/** Escapes Redis glob characters, so a key pattern matches only that key. */
function literal(key: string): string {
  return key.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

/**
 * The ACL SETUSER arguments: reset (so an update drops what the user had), on, the password, its
 * keys, its layouts' definitions read-only (%R~, Redis 7), no channels, its commands.
 */
export function bridgeAclRules(prefix: string, layoutIds: readonly string[], password: string): string[] {
  return [
    'reset', 'on', `>${password}`,
    ...bridgeKeys(prefix, layoutIds).map((k) => `~${literal(k)}`),
    ...layoutIds.map((l) => `%R~${literal(layoutKey(prefix, l))}`),
    'resetchannels', '-@all', ...BRIDGE_COMMANDS.map((c) => `+${c}`),
  ];
}

/** Every node ACLs must be set on: the one server, or each master and replica of a cluster. */
function nodesOf(redis: RedisClient): Redis[] {
  return redis instanceof Cluster ? redis.nodes('all') : [redis];
}

export interface BridgeGrant {
  user: string;
  password: string;
  /** nodes the user was set on */
  nodes: number;
  /** whether ACL SAVE wrote it to the servers' aclfile (false: a server without one; the user lasts until it restarts) */
  saved: boolean;
}

function checkIds(bridgeId: string, layoutIds: readonly string[]): void {
  if (!BRIDGE_ID.test(bridgeId)) throw new AppError('invalid_argument', `--bridge-id must be 1-64 letters, digits, "_", "." or "-", not ${JSON.stringify(bridgeId)}`);
  if (layoutIds.length === 0) throw new AppError('invalid_argument', 'give at least one --layout');
  const bad = layoutIds.find((l) => !LAYOUT_ID.test(l));
  if (bad !== undefined) throw new AppError('invalid_argument', `--layout must be a layout id, not ${JSON.stringify(bad)}`);
}

/**
 * ACL SETUSER with the rules; a command this server's version does not have (CLIENT SETINFO before
 * Redis 7.2, say) is left out, since no client can send it there either.
 */
async function setUser(node: Redis, user: string, rules: string[]): Promise<void> {
  for (let left = [...rules]; ; ) {
    try {
      await node.call('ACL', 'SETUSER', user, ...left);
      return;
    } catch (e) {
      const unknown = /modifier '(\+[^']+)': Unknown command/.exec((e as Error).message)?.[1];
      if (!unknown || !left.includes(unknown)) throw e;
      left = left.filter((r) => r !== unknown);
    }
  }
}

/** ACL SAVE on each node; true when every node has an aclfile to write. */
async function saveAcl(nodes: Redis[]): Promise<boolean> {
  const saved = await Promise.all(nodes.map((n) => n.call('ACL', 'SAVE').then(() => true, () => false)));
  return saved.every(Boolean);
}

/** Creates or updates the bridge's user for exactly these layouts, with a new random password. */
export async function grantBridge(redis: RedisClient, prefix: string, bridgeId: string, layoutIds: readonly string[]): Promise<BridgeGrant> {
  checkIds(bridgeId, layoutIds);
  const password = randomBytes(24).toString('base64url');
  const user = bridgeUser(bridgeId);
  const nodes = nodesOf(redis);
  await Promise.all(nodes.map((n) => setUser(n, user, bridgeAclRules(prefix, [...new Set(layoutIds)], password))));
  return { user, password, nodes: nodes.length, saved: await saveAcl(nodes) };
}

/** Deletes the bridge's user on every node; false when no node had it. */
export async function revokeBridge(redis: RedisClient, bridgeId: string): Promise<boolean> {
  checkIds(bridgeId, ['-']);
  const nodes = nodesOf(redis);
  const deleted = await Promise.all(nodes.map((n) => n.call('ACL', 'DELUSER', bridgeUser(bridgeId)) as Promise<number>));
  await saveAcl(nodes);
  return deleted.some((d) => d > 0);
}

/** The URL a bridge puts in its config: the admin's URL (scheme, host, port) with the bridge's user and password. */
export function bridgeRedisUrl(adminUrl: string, user: string, password: string): string {
  const url = new URL(adminUrl.includes('://') ? adminUrl : `redis://${adminUrl}`);
  url.username = encodeURIComponent(user);
  url.password = encodeURIComponent(password);
  url.pathname = '';
  return url.toString().replace(/\/$/, '');
}
