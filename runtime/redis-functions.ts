// Loads a Redis function library on every server that must hold it: the one server, or every
// master of a cluster (each shard runs its own functions; replicas get them from their master).
import { Cluster } from 'ioredis';
import type { RedisClient } from './redis.js';

/** FUNCTION LOAD REPLACE on every master; a node that refuses (NOPERM) makes it throw. */
export async function loadFunctions(redis: RedisClient, source: string): Promise<void> {
  const nodes = redis instanceof Cluster ? redis.nodes('master') : [redis];
  await Promise.all(nodes.map((n) => n.call('FUNCTION', 'LOAD', 'REPLACE', source)));
}

/** Whether an error says the function is not loaded there (a server the gateway never reached). */
export function isFunctionMissing(e: unknown): boolean {
  return e instanceof Error && /Function not found/i.test(e.message);
}
