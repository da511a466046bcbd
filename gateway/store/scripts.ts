// Loads the Lua scripts in lua/ (named verbNoun-N.lua, N = number of KEYS; a `--!include` line
// brings in a shared file of schemas/, see schemas/show-record.ts) and runs them with EVALSHA.
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'ioredis';
import type { RedisClient } from '../../runtime/redis.js';
import { withIncludes } from '../../schemas/show-record.js';

const LUA_DIR = join(dirname(fileURLToPath(import.meta.url)), 'lua');

const defined = new WeakSet<RedisClient>();
/** each script's SHA-1, by name (the EVALSHA of runScriptOnBulk) */
const shas = new Map<string, string>();

/** Defines every script on the client once; afterwards `runScript(redis, 'importLayout', keys, args)`. */
function defineScripts(redis: RedisClient): void {
  if (defined.has(redis)) return;
  for (const file of readdirSync(LUA_DIR)) {
    const m = /^([A-Za-z]+)-(\d+)\.lua$/.exec(file);
    if (!m) continue;
    const lua = withIncludes(readFileSync(join(LUA_DIR, file), 'utf8'));
    redis.defineCommand(m[1]!, { numberOfKeys: Number(m[2]), lua });
    shas.set(m[1]!, createHash('sha1').update(lua).digest('hex'));
  }
  defined.add(redis);
}

export async function runScript(redis: RedisClient, name: string, keys: string[], args: (string | number)[]): Promise<unknown> {
  defineScripts(redis);
  const fn = (redis as unknown as Record<string, (...a: (string | number)[]) => Promise<unknown>>)[name];
  if (typeof fn !== 'function') throw new Error(`no Lua script ${name} in ${LUA_DIR}`);
  return fn.call(redis, ...keys, ...args);
}

/** A RESP bulk string. */
function bulk(text: string): string {
  return `$${Buffer.byteLength(text)}\r\n${text}\r\n`;
}

/**
 * An EVALSHA whose last arguments come already written as RESP bulk strings (entry-batch.ts). Its
 * ioredis `args` are only the SHA, the key count and the keys: what ioredis reads them for (a
 * cluster's hash slot, its debug log).
 */
class BulkScriptCommand extends Command {
  constructor(
    private readonly sha: string,
    private readonly keyNames: readonly string[],
    private readonly fixed: readonly string[],
    private readonly count: number,
    private readonly bulks: Buffer,
  ) {
    super('evalsha', [sha, keyNames.length, ...keyNames], { replyEncoding: 'utf8' });
  }

  override toWritable(): Buffer {
    let head = `*${3 + this.keyNames.length + this.fixed.length + this.count}\r\n$7\r\nevalsha\r\n${bulk(this.sha)}${bulk(String(this.keyNames.length))}`;
    for (const k of this.keyNames) head += bulk(k);
    for (const a of this.fixed) head += bulk(a);
    return Buffer.concat([Buffer.from(head, 'utf8'), this.bulks]);
  }
}

/**
 * Runs the script `name` on `keys` with `args` and then `count` more arguments given as their RESP
 * bulk strings, `bulks`. Where Redis lacks the script (NOSCRIPT: restarted, flushed, failed over)
 * the call is made again through runScript, which loads it, with those arguments as `texts()`.
 */
export function runScriptOnBulk(redis: RedisClient, name: string, keys: string[], args: (string | number)[], count: number, bulks: Buffer, texts: () => string[]): Promise<unknown> {
  defineScripts(redis);
  const sha = shas.get(name);
  if (sha === undefined) return Promise.reject(new Error(`no Lua script ${name} in ${LUA_DIR}`));
  return (redis.sendCommand(new BulkScriptCommand(sha, keys, args.map(String), count, bulks)) as Promise<unknown>).catch((e: unknown) => {
    if (!(e instanceof Error) || !e.message.startsWith('NOSCRIPT')) throw e;
    return runScript(redis, name, keys, [...args, ...texts()]);
  });
}
