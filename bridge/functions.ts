// The bridge's scripts are Redis functions (schemas/bridge-functions.lua), called with FCALL: its
// own Redis user may run no Lua of its own. The gateway and `audiencectl bridge grant` load them;
// a server that has none yet (a Redis no gateway of this version reached) is loaded here when this
// bridge's user may (a full-rights user: a lab, a test), and otherwise the call fails naming the
// fix, and is counted where its caller counts Redis failures.
import { BRIDGE_FUNCTIONS, bridgeFunctionsSource } from '../schemas/bridge-functions.js';
import { isFunctionMissing, loadFunctions } from '../runtime/redis-functions.js';
import type { RedisClient } from '../runtime/redis.js';

export class FunctionsMissingError extends Error {
  override name = 'FunctionsMissingError';
}

/** FCALL of one of the bridge's functions. */
export async function callBridgeFunction(redis: RedisClient, name: keyof typeof BRIDGE_FUNCTIONS, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
  const fn = BRIDGE_FUNCTIONS[name];
  try {
    return await redis.fcall(fn, keys.length, ...keys, ...args);
  } catch (e) {
    if (!isFunctionMissing(e)) throw e;
    await loadFunctions(redis, bridgeFunctionsSource()).catch((loadError: unknown) => {
      throw new FunctionsMissingError(`Redis has no function ${fn} and this bridge's user may not load it (${(loadError as Error).message}): start a gateway of this version on it, or run audiencectl bridge grant`);
    });
    return redis.fcall(fn, keys.length, ...keys, ...args);
  }
}
