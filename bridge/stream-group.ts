// This bridge's consumer group on a layout's stream: its name, creating it, reading its state,
// acknowledging entries, and recognising the errors that say it is gone.
import { callBridgeFunction } from './functions.js';
import type { RedisClient } from '../runtime/redis.js';
import { actionStreamKey } from '../schemas/redis-keys.js';

export function groupName(bridgeId: string): string {
  return `bridge:${bridgeId}`;
}

/**
 * Creates the group at `from` (an entry id: the group delivers what comes after it; '0': the oldest
 * entry still there), with the stream if missing. False if it existed.
 */
export async function createGroup(ops: RedisClient, stream: string, group: string, from: string): Promise<boolean> {
  try {
    await ops.xgroup('CREATE', stream, group, from, 'MKSTREAM');
    return true;
  } catch (e) {
    if (!String((e as Error).message).includes('BUSYGROUP')) throw e;
    return false;
  }
}

/** The group (or its stream) is gone: Redis lost its data, or someone deleted it. */
export function isMissingGroup(e: unknown): boolean {
  const m = String((e as Error)?.message ?? e);
  return m.startsWith('NOGROUP') || m.startsWith('UNBLOCKED');
}

/**
 * This bridge's group on a layout's stream, from XINFO GROUPS: null when the group (or the
 * stream) does not exist; `lag` is the entries not yet delivered to the group.
 */
export async function groupInfo(redis: RedisClient, prefix: string, bridgeId: string, layoutId: string): Promise<{ lag: number } | null> {
  let groups: (string | number)[][];
  try {
    groups = (await redis.call('XINFO', 'GROUPS', actionStreamKey(prefix, layoutId))) as (string | number)[][];
  } catch (e) {
    if (String((e as Error).message).includes('no such key')) return null;
    throw e;
  }
  const field = (g: (string | number)[], name: string) => g[g.indexOf(name) + 1];
  const mine = groups.find((g) => field(g, 'name') === groupName(bridgeId));
  return mine ? { lag: Number(field(mine, 'lag') ?? 0) } : null;
}

/** XACK for one layout's stream in this bridge's group (the scheduler calls it after sending). */
export function streamAcker(ops: RedisClient, prefix: string, bridgeId: string, layoutId: string): (ids: string[]) => Promise<void> {
  const stream = actionStreamKey(prefix, layoutId);
  const group = groupName(bridgeId);
  return async (ids) => {
    if (ids.length > 0) await ops.xack(stream, group, ...ids);
  };
}

/** Entries after the group's position counted one by one, at most: beyond, the count waits for the bridge to catch up. */
const SETTLE_SCAN_MAX = 10_000;

/**
 * The entries trimmed (or deleted) from a layout's stream before this bridge's group read them,
 * since the last call; the group's read counter is set right at the same time, so its lag (XINFO
 * GROUPS) is the entries waiting again. `missed` is 0 when there is no group yet or it is too far
 * behind to count; `lastDelivered` is the group's last-delivered-id (null: no group).
 */
export async function settleTrimmed(ops: RedisClient, stream: string, group: string): Promise<{ missed: number; lastDelivered: string | null }> {
  const [missed, , last] = (await callBridgeFunction(ops, 'settleTrimmed', [stream], [group, SETTLE_SCAN_MAX])) as [number, number, string?];
  return { missed, lastDelivered: last ?? null };
}

/** Whether stream id `a` comes after `b` (ids are `ms-seq`, compared as numbers). */
export function streamIdAfter(a: string, b: string): boolean {
  const [am = 0, as = 0] = a.split('-').map(Number);
  const [bm = 0, bs = 0] = b.split('-').map(Number);
  return am > bm || (am === bm && as > bs);
}
