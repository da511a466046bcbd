// The reader's commands whose replies carry stream entries (XREADGROUP, XAUTOCLAIM), sent as
// ioredis Commands that settle their promise through methods instead of per-command closures.
//
// ioredis makes two closures for every command (Command.initPromise: `resolve` and `reject`), and
// its reply handler calls `command.resolve(reply)`. While V8 has not optimised that code, a value
// handed to a closure made per call outlives the young-generation collections that follow: in a
// bridge just started, each scavenge of a drain found nearly every entry read since the previous
// one alive (about 2 MB at 1,000 Hz, for the first 300 to 550 ms), and promoted it at the next,
// though a heap snapshot found none of it reachable; ticks waited for scavenges of 2 to 4 ms.
// A plain read loop showed the same with ioredis's Command, and nothing with a copy of it that
// settles through methods (bench/results/bridge-cold-drain-survivors-2026-11-24T00Z.txt).
//
// StreamCommand keeps ioredis's behaviour: the reply handler, command and blocking timeouts and
// Cluster redirections all call `resolve` and `reject` as methods of the command (a Cluster sets
// its own `reject` on the command and calls this one with the command as `this`). These two
// commands have no argument transformer in ioredis and are sent without a callback, so the
// promise is the command's own; the bridge's clients set no keyPrefix (the prefix is part of each
// key) and no showFriendlyErrorStack, which `call()` would otherwise pass on. Should an ioredis
// release change what is replaced here, test/bridge/stream-command.test.ts fails: it checks the
// replies, the errors and the timeouts, and measures what the collector keeps.
import { Command } from 'ioredis';
import type { RedisClient } from '../runtime/redis.js';

export type StreamCommandName = 'XREADGROUP' | 'XAUTOCLAIM';

/** What of ioredis's Command this file relies on (JavaScript members its typings keep private). */
interface CommandInternals {
  promise: Promise<unknown>;
  isResolved: boolean;
  transformed: boolean;
  stringifyArguments(): void;
  transformReply(reply: unknown): unknown;
  _clearTimers(): void;
  initPromise(): void;
  resolve(reply: unknown): Promise<unknown>;
  reject(err: Error): void;
  settle: (value: unknown) => void;
  fail: (err: Error) => void;
}

export class StreamCommand extends Command {
  constructor(name: StreamCommandName, args: (string | number)[]) {
    super(name, args, { replyEncoding: 'utf8' });
  }
}

const own = StreamCommand.prototype as unknown as CommandInternals;
// Called by ioredis's constructor in place of its own: the same promise, with no closure but the executor.
own.initPromise = function (this: CommandInternals) {
  this.promise = new Promise((settle, fail) => {
    this.transformed = true;
    this.stringifyArguments();
    this.settle = settle;
    this.fail = fail;
  });
};
own.resolve = function (this: CommandInternals, reply: unknown) {
  try {
    this._clearTimers();
    this.settle(this.transformReply(reply));
    this.isResolved = true;
  } catch (e) {
    this.reject(e as Error);
  }
  return this.promise;
};
own.reject = function (this: CommandInternals, err: Error) {
  this._clearTimers();
  this.fail(err);
};

/** Sends a StreamCommand on `redis` and resolves with its reply (strings, as `call` gives them). */
export function sendStreamCommand<T>(redis: RedisClient, name: StreamCommandName, args: (string | number)[]): Promise<T> {
  return redis.sendCommand(new StreamCommand(name, args)) as Promise<T>;
}
