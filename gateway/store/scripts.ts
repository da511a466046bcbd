// Loads the Lua scripts in lua/ (named verbNoun-N.lua, N = number of KEYS; a `--!include` line
// brings in a shared file of schemas/, see schemas/show-record.ts) and runs them with EVALSHA.
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RedisClient } from '../../runtime/redis.js';
import { withIncludes } from '../../schemas/show-record.js';

const LUA_DIR = join(dirname(fileURLToPath(import.meta.url)), 'lua');

const defined = new WeakSet<RedisClient>();

/** Defines every script on the client once; afterwards `runScript(redis, 'importLayout', keys, args)`. */
function defineScripts(redis: RedisClient): void {
  if (defined.has(redis)) return;
  for (const file of readdirSync(LUA_DIR)) {
    const m = /^([A-Za-z]+)-(\d+)\.lua$/.exec(file);
    if (!m) continue;
    redis.defineCommand(m[1]!, { numberOfKeys: Number(m[2]), lua: withIncludes(readFileSync(join(LUA_DIR, file), 'utf8')) });
  }
  defined.add(redis);
}

export async function runScript(redis: RedisClient, name: string, keys: string[], args: (string | number)[]): Promise<unknown> {
  defineScripts(redis);
  const fn = (redis as unknown as Record<string, (...a: (string | number)[]) => Promise<unknown>>)[name];
  if (typeof fn !== 'function') throw new Error(`no Lua script ${name} in ${LUA_DIR}`);
  return fn.call(redis, ...keys, ...args);
}
