// Appends accepted actions to their layout's stream. The caller answers 200 only once this resolves,
// that is once Redis has acknowledged the XADD.
import type { Redis } from 'ioredis';
import { ACTION_FIELD, encodeActionEntry } from '../../schemas/action-entry.js';
import type { ActionEntry } from '../../schemas/types.js';
import { orUnavailable } from '../errors.js';
import type { RedisKeys } from '../store/keys.js';
import { untimed, type RedisTimer } from '../store/redis.js';

export class ActionLog {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    /** approximate trim length of each stream (MAXLEN ~) */
    private readonly maxLen: number,
    private readonly timed: RedisTimer = untimed,
  ) {}

  /** The stream entry id Redis assigned. */
  async append(entry: ActionEntry): Promise<string> {
    const id = await orUnavailable(
      this.timed('xadd', this.redis.xadd(this.keys.actions(entry.layoutId), 'MAXLEN', '~', this.maxLen, '*', ACTION_FIELD, encodeActionEntry(entry))),
    );
    return id ?? '';
  }
}
