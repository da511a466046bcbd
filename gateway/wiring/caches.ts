// The gateway's third step: what it keeps in memory of Redis (the API keys, the layouts, the signing
// keys), loaded, and kept in step by the invalidation messages and the periodic re-check
// (store/cache-sync.ts). What holds state derived from them (the crowd's revocations, the live
// channel's sockets) follows them: told of each change once the caches applied it.
import type { Logger } from '../../runtime/log.js';
import { ApiKeyAuth } from '../auth/api-keys.js';
import type { SigningKeyring } from '../auth/signing-keyring.js';
import type { GatewayConfig } from '../config.js';
import { LayoutCache } from '../layouts/layout-cache.js';
import type { GatewayMetrics } from '../metrics.js';
import { InvalidationListener } from '../store/cache-sync.js';
import type { Invalidation } from '../store/invalidation.js';
import type { Stores } from '../store/stores.js';
import type { Connections } from './connect.js';

/** The metric label of each invalidation message (a layout message is a page switch or a re-import). */
const INVALIDATION_LABEL: Record<Invalidation['kind'], string> = {
  'key-revoked': 'key_revoked',
  'key-created': 'key_created',
  layout: 'page_switch',
  'signing-keys': 'signing_keys',
};

/** What follows the caches: told after each change, each reload of the signing keys and each full re-check. */
export interface CacheFollower {
  keyRevoked?(keyId: string): void;
  layoutChanged?(layoutId: string): void;
  signingKeysChanged?(): void;
  rechecked?(): void;
}

export interface Caches {
  apiKeys: ApiKeyAuth;
  layouts: LayoutCache;
  keyring: SigningKeyring;
  follow(follower: CacheFollower): void;
  stop(): void;
}

export async function loadCaches(c: Connections, stores: Stores, keyring: SigningKeyring, config: GatewayConfig, metrics: GatewayMetrics, log: Logger): Promise<Caches> {
  const timed = <T>(command: string, p: Promise<T>) => metrics.redis(command, p);
  const apiKeys = new ApiKeyAuth(stores.apiKeys, c.now, (e) => log.warn({ err: e }, 'could not record lastUsedAt'), timed);
  const layouts = new LayoutCache(stores.layouts, timed);
  metrics.watchSigningKeys(() => keyring.unreadable);
  await Promise.all([keyring.reload(), apiKeys.reload()]);
  keyring.opensSome(); // a KEK that does not open the stored keys: no half-started gateway

  const followers: CacheFollower[] = [];
  const recheck = (): Promise<void> =>
    Promise.all([apiKeys.reload(), keyring.reload(), layouts.recheck()]).then(
      () => followers.forEach((f) => f.rechecked?.()),
      (e: unknown) => log.warn({ err: e }, 'cache re-check failed'),
    );
  const listener = new InvalidationListener(
    c.subscriber,
    stores.keys,
    {
      apply(m) {
        metrics.invalidations.labels(INVALIDATION_LABEL[m.kind]).inc();
        if (m.kind === 'key-revoked') {
          apiKeys.keyRevoked(m.id);
          followers.forEach((f) => f.keyRevoked?.(m.id));
        } else if (m.kind === 'key-created') apiKeys.keyCreated(m.id);
        else if (m.kind === 'layout') {
          layouts.invalidate(m.id);
          followers.forEach((f) => f.layoutChanged?.(m.id));
        } else
          keyring.reload().then(
            () => followers.forEach((f) => f.signingKeysChanged?.()),
            (e: unknown) => log.warn({ err: e }, 'signing key reload failed'),
          );
      },
      recheck,
    },
    config.cacheRecheckMs,
  );
  await listener.start();
  // Redis coming back re-reads everything cached: messages may have been missed, and Redis may have
  // come back empty (the keyring's reload then makes a new signing key)
  c.watch(recheck);
  return { apiKeys, layouts, keyring, follow: (f) => void followers.push(f), stop: () => listener.stop() };
}
