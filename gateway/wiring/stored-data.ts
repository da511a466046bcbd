// The gateway's second step: the data it stores, made ready before anything reads it. Data of
// version 0.1 moves to the tagged key names (idempotent: several gateways starting at once all
// finish the same job), the venue bridges' Redis functions are loaded on every master (a bridge's
// user may call them, not load them), and signing secrets written in plain before the
// key-encryption key are sealed under it.
import type { Logger } from '../../runtime/log.js';
import { loadFunctions } from '../../runtime/redis-functions.js';
import type { RedisClient } from '../../runtime/redis.js';
import { bridgeFunctionsSource } from '../../schemas/bridge-functions.js';
import { SigningKeyring } from '../auth/signing-keyring.js';
import { recordBounds, type GatewayConfig } from '../config.js';
import { hasLegacyKeys, migrateLegacyKeys } from '../store/migrate.js';
import type { Kek } from '../store/signing-kek.js';
import { createStores, type Stores } from '../store/stores.js';

export interface StoredData {
  stores: Stores;
  /** the signing keys (its reload makes a signing key when Redis has none) */
  keyring: SigningKeyring;
}

export async function migrateAndSeal(redis: RedisClient, config: GatewayConfig, kek: Kek, log: Logger): Promise<StoredData> {
  const stores = createStores(redis, config.redisPrefix, kek, recordBounds(config));
  if (await hasLegacyKeys(redis, config.redisPrefix)) {
    const { moved } = await migrateLegacyKeys(redis, config.redisPrefix);
    log.info({ moved }, 'moved 0.1 keys to their tagged names');
  }
  await loadFunctions(redis, bridgeFunctionsSource());
  const sealed = await stores.signingKeys.sealPlain();
  if (sealed > 0) log.info({ sealed, kek: kek.id }, 'sealed signing keys stored in plain under the key-encryption key');
  return { stores, keyring: new SigningKeyring(stores.signingKeys) };
}
