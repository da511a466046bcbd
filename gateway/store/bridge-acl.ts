// A least-privilege Redis user for one venue bridge: `bridge-<ID>` may touch only its layouts'
// action streams, presence sets, dead-letter streams, cue hashes, show records and light streams
// (append only), each with only the commands the bridge sends to that key (ACL selectors), call
// the bridge's Redis functions (FCALL; no EVAL, so no Lua of its own), and read its layouts'
// definitions (HGET, HMGET: what OSCQuery describes, the light canvas). Nothing else: no signing keys, API keys, teams, admin sessions, writes to a
// definition or another layout's keys, no pub/sub, no other database, no admin commands.
// On Redis Cluster the user is set on every node, masters and replicas, since ACLs are per node. A
// new grant disconnects the connections of the old password.
import { randomBytes } from 'node:crypto';
import { Cluster, type Redis } from 'ioredis';
import type { RedisClient } from '../../runtime/redis.js';
import { actionStreamKey, cueStateKey, deadLetterKey, layoutKey, lightStreamKey, presenceKey, showRecordKey, showRecordStateKey } from '../../schemas/redis-keys.js';
import { AppError } from '../errors.js';
import { loadFunctions } from '../../runtime/redis-functions.js';
import { bridgeFunctionsSource } from '../../schemas/bridge-functions.js';

/**
 * The connection's own commands, on no key: AUTH/HELLO, PING, QUIT, SELECT 0 only (a URL's /0),
 * READONLY, CLIENT SETNAME/SETINFO/ID, the cluster's slot map, the server's clock (TIME), and INFO:
 * ioredis's ready check, which keeps a connection that a venue link's proxy accepted, but that does
 * not carry commands yet, from counting as ready (a 30 s cut did not recover without it).
 */
export const BRIDGE_CONNECTION_COMMANDS = [
  'auth', 'hello', 'ping', 'quit', 'select|0', 'time', 'readonly', 'info',
  'client|setname', 'client|setinfo', 'client|id', 'cluster|slots', 'cluster|shards', 'cluster|nodes', 'cluster|info',
] as const;

/**
 * Which commands reach which of a layout's keys: each an ACL selector, so a command reaches only the
 * key it is for (no XADD on the action stream, no HGETALL of the definition). A command inside one
 * of the bridge's functions is checked the same way (Redis checks a function's commands against its
 * caller), so each function's commands are listed with the key they touch.
 */
export function bridgeSelectors(prefix: string, layoutId: string): { keys: string[]; commands: string[] }[] {
  const stream = actionStreamKey(prefix, layoutId);
  const record = [showRecordKey(prefix, layoutId), showRecordStateKey(prefix, layoutId)];
  return [
    // its consumer group; XINFO, XGROUP SETID and XRANGE also from ac_settle_trimmed_1
    { keys: [stream], commands: ['xreadgroup', 'xack', 'xautoclaim', 'xinfo|groups', 'xinfo|stream', 'xgroup|create', 'xgroup|setid', 'xrange', 'xpending'] },
    // unusable entries, with their reason (MAXLEN ~ and 4 KiB of each entry's fields)
    { keys: [deadLetterKey(prefix, layoutId)], commands: ['xadd'] },
    // its displays
    { keys: [presenceKey(prefix, layoutId)], commands: ['zadd', 'zremrangebyscore', 'pexpire', 'zrem'] },
    // crowd-cue state (ac_fire_cue_1 too)
    { keys: [cueStateKey(prefix, layoutId)], commands: ['hgetall', 'hget', 'hset'] },
    // the show record, appended by ac_fire_cue_1 and ac_sample_crowd_1
    { keys: record, commands: ['xadd', 'xdel', 'xrange', 'hget', 'hset', 'hmget', 'hincrby', 'pexpire'] },
    // the looks its light OSC input plays (XADD with MAXLEN ~): nothing else of the light stream
    { keys: [lightStreamKey(prefix, layoutId)], commands: ['xadd'] },
    // its layout's definition, read-only: what OSCQuery describes (version, name, pages, zones) and the light canvas
    { keys: [layoutKey(prefix, layoutId)], commands: ['hget', 'hmget'] },
    // its functions, called with the keys they touch
    { keys: [stream, cueStateKey(prefix, layoutId), ...record], commands: ['fcall'] },
  ];
}

const BRIDGE_ID = /^[A-Za-z0-9_.-]{1,64}$/;
const LAYOUT_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The Redis user of a bridge. */
export function bridgeUser(bridgeId: string): string {
  return `bridge-${bridgeId}`;
}

/** Escapes Redis glob characters, so a key pattern matches only that key. */
function literal(key: string): string {
  return key.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

/**
 * The ACL SETUSER arguments: reset (so an update drops what the user had), on, the password, the
 * connection's commands at the root, and one selector per layout's key and its commands (Redis 7).
 * No channel, no other key, no EVAL.
 */
export function bridgeAclRules(prefix: string, layoutIds: readonly string[], password: string): string[] {
  const selectors = layoutIds.flatMap((l) => bridgeSelectors(prefix, l));
  return [
    'reset', 'on', `>${password}`, 'resetchannels', '-@all', ...BRIDGE_CONNECTION_COMMANDS.map((c) => `+${c}`),
    ...selectors.map((sel) => `(${[...sel.keys.map((k) => `~${literal(k)}`), ...sel.commands.map((x) => `+${x}`)].join(' ')})`),
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
/** Ends every connection of the user on this node: the old password's clients, after a new grant. */
async function disconnectUser(node: Redis, user: string): Promise<void> {
  await node.call('CLIENT', 'KILL', 'USER', user).catch((e: unknown) => {
    if (!/No such user/i.test((e as Error).message)) throw e;
  });
}

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
  await loadFunctions(redis, bridgeFunctionsSource()); // what the user may call, there before it can
  await Promise.all(nodes.map((n) => setUser(n, user, bridgeAclRules(prefix, [...new Set(layoutIds)], password))));
  // nobody has the new password yet: every connection of the user is the old one's
  await Promise.all(nodes.map((n) => disconnectUser(n, user)));
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
