// The signing keys in memory: which kid signs, and which kids still verify. Reloaded whole on
// every invalidation message, every re-check and every reconnect (there are only a handful of keys).
import { AppError } from '../errors.js';
import type { SigningKey, SigningKeyStore } from '../store/signing-keys.js';

export class SigningKeyring {
  private keys = new Map<string, SigningKey>();
  private current: string | null = null;

  constructor(private readonly store: SigningKeyStore) {}

  /**
   * Loads the keys. When Redis has no current key (first start, or Redis lost its data: a restart
   * without persistence, FLUSHALL, failover to an empty replica) it makes one first, so /token
   * never waits for an operator. A new key, not the ones this process still holds in memory:
   * the revocations were lost with the data, so tokens signed before the loss must not verify.
   */
  async reload(): Promise<void> {
    let loaded = await this.store.load();
    if (loaded.current === null) {
      await this.store.ensureCurrent();
      loaded = await this.store.load();
    }
    this.keys = new Map(loaded.keys.map((k) => [k.kid, k]));
    this.current = loaded.current;
  }

  /** The key new tokens are signed with. */
  signer(): { kid: string; secret: Uint8Array } {
    const key = this.current === null ? undefined : this.keys.get(this.current);
    if (!key) throw new AppError('unavailable', 'No signing key is loaded yet.');
    return { kid: key.kid, secret: key.secret };
  }

  /** 'active' verifies; 'retired' once did; 'unknown' never existed here. */
  status(kid: string | undefined): 'active' | 'retired' | 'unknown' {
    const key = kid === undefined ? undefined : this.keys.get(kid);
    if (!key) return 'unknown';
    return key.retiredAt === null ? 'active' : 'retired';
  }

  /** The secret of an active key, for verification. */
  secret(kid: string): Uint8Array | undefined {
    const key = this.keys.get(kid);
    return key && key.retiredAt === null ? key.secret : undefined;
  }
}
