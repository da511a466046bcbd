// What every audiencectl command is built with: `run` wraps a command's body (its --json, its
// Redis connection, its errors and exit code), `leaf` makes a command with --json, and the
// arguments' readers that name the option they refuse.
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { RedisClient, RedisTarget } from '../../runtime/redis.js';
import { loadConfig, recordBounds, redisTarget } from '../config.js';
import { AppError } from '../errors.js';
import { connectToolRedis } from '../store/redis.js';
import { loadKek } from '../store/signing-kek.js';
import { createStores, type Stores } from '../store/stores.js';
import { CliOutput } from './output.js';

export interface Ctx {
  stores: Stores;
  out: CliOutput;
  /** where Redis is (the admin's URL or seed nodes) */
  target: RedisTarget;
}

export type Action = (ctx: Ctx, ...args: never[]) => Promise<void>;

/** Wraps a command body: parses --json, connects to Redis, reports errors, sets the exit code. */
export function run(body: Action) {
  return async (...args: unknown[]): Promise<void> => {
    const cmd = args[args.length - 1] as Command;
    const out = new CliOutput(cmd.opts<{ json?: boolean }>().json === true);
    let redis: RedisClient | undefined;
    try {
      // only what audiencectl uses: a bad PORT or TOKEN_TTL_SECONDS is the gateway's business
      const env = process.env;
      const config = loadConfig({
        REDIS_URL: env.REDIS_URL, REDIS_CLUSTER_NODES: env.REDIS_CLUSTER_NODES, REDIS_PREFIX: env.REDIS_PREFIX,
        REDIS_TLS_CA_FILE: env.REDIS_TLS_CA_FILE, REDIS_TLS_CERT_FILE: env.REDIS_TLS_CERT_FILE, REDIS_TLS_KEY_FILE: env.REDIS_TLS_KEY_FILE, REDIS_TLS_SERVERNAME: env.REDIS_TLS_SERVERNAME,
        SIGNING_KEK_FILE: env.SIGNING_KEK_FILE, SHOW_RECORD_RETENTION_SECONDS: env.SHOW_RECORD_RETENTION_SECONDS, SHOW_RECORD_MAX_BYTES: env.SHOW_RECORD_MAX_BYTES,
      });
      // only the commands that read or make a signing secret need it
      const kek = config.signingKekFile ? loadKek(config.signingKekFile) : null;
      const target = redisTarget(config);
      redis = await connectToolRedis(target);
      await body({ stores: createStores(redis, config.redisPrefix, kek, recordBounds(config)), out, target }, ...(args.slice(0, -1) as never[]));
    } catch (e) {
      process.exitCode = out.failure(e);
    } finally {
      redis?.disconnect();
    }
  };
}

export function readJsonFile(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new AppError('invalid_argument', `cannot read ${file}: ${(e as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new AppError('invalid_layout', `${file} is not JSON: ${(e as Error).message}`);
  }
}

export function leaf(parent: Command, name: string, description: string): Command {
  return parent.command(name).description(description).option('--json', 'print one JSON object');
}

/** A time given on the command line (ISO 8601 or ms since the epoch), or invalid_argument naming the option. */
export function timeArgument(option: string, text: string): number {
  const ms = /^\d+$/.test(text) ? Number(text) : Date.parse(text);
  if (!Number.isFinite(ms)) throw new AppError('invalid_argument', `${option} must be an ISO 8601 time or ms since the epoch; got ${JSON.stringify(text)}`);
  return ms;
}

/** A number given on the command line, or invalid_argument naming the option. */
export function numberArgument(option: string, text: string): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n)) throw new AppError('invalid_argument', `${option} must be a number; got ${JSON.stringify(text)}`);
  return n;
}
