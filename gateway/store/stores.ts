// The control-plane stores over one Redis connection, built together because they refer to each other.
import type { RedisClient } from '../../runtime/redis.js';
import { AdminStore } from './admins.js';
import { CueStore } from './cues.js';
import { ApiKeyStore } from './api-keys.js';
import { RedisKeys } from './keys.js';
import { LayoutStore } from './layouts.js';
import { LightStore } from './light.js';
import { ClockFiguresStore } from './clock-figures.js';
import { ModerationStore } from './moderation.js';
import { ShowRecordStore, type RecordBounds } from './show-record.js';
import { RECORD_DEFAULTS } from '../../schemas/show-record.js';
import type { Kek } from './signing-kek.js';
import { SigningKeyStore } from './signing-keys.js';
import { TeamStore } from './teams.js';

export interface Stores {
  redis: RedisClient;
  keys: RedisKeys;
  teams: TeamStore;
  layouts: LayoutStore;
  light: LightStore;
  clockFigures: ClockFiguresStore;
  apiKeys: ApiKeyStore;
  signingKeys: SigningKeyStore;
  admins: AdminStore;
  cues: CueStore;
  moderation: ModerationStore;
  showRecord: ShowRecordStore;
}

/**
 * `kek`: the key-encryption key of the signing secrets; null where none is held (their secrets then
 * cannot be read or made). `record`: the show record's bounds (SHOW_RECORD_RETENTION_SECONDS,
 * SHOW_RECORD_MAX_BYTES), set on every layout the stores write a record entry of.
 */
export function createStores(redis: RedisClient, prefix: string, kek: Kek | null = null, record: RecordBounds = RECORD_DEFAULTS): Stores {
  const keys = new RedisKeys(prefix);
  const layouts = new LayoutStore(redis, keys, record);
  return {
    redis,
    keys,
    teams: new TeamStore(redis, keys),
    layouts,
    light: new LightStore(redis, keys, layouts),
    clockFigures: new ClockFiguresStore(redis, keys),
    apiKeys: new ApiKeyStore(redis, keys, layouts),
    signingKeys: new SigningKeyStore(redis, keys, kek),
    admins: new AdminStore(redis, keys),
    cues: new CueStore(redis, keys, layouts),
    moderation: new ModerationStore(redis, keys, record),
    showRecord: new ShowRecordStore(redis, keys),
  };
}
