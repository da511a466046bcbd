// The signing keys in memory: which kid signs, and which kids still verify. Reloaded whole on
// every invalidation message, every re-check and every reconnect (there are only a handful of keys),
// each key opened on its own: a key this process cannot open verifies nothing here and is reported
// (/readyz, audience_gateway_signing_keys_unreadable), and never keeps a retirement of another key
// from taking effect.
import { AppError } from '../errors.js';
import { KekError } from '../store/signing-kek.js';
import type { SigningKey, SigningKeyStore, UnreadableKey } from '../store/signing-keys.js';

export class SigningKeyring {
  private keys = new Map<string, SigningKey>();
  private current: string | null = null;
  private cannotOpen: UnreadableKey[] = [];

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
    this.cannotOpen = loaded.unreadable;
  }

  /**
   * The key new tokens are signed with: the current one, or while it cannot be opened here, the
   * newest active key that can (tokens it signs verify on every gateway that opens it).
   */
  signer(): { kid: string; secret: Uint8Array } {
    let key = this.current === null ? undefined : this.keys.get(this.current);
    if (!key) key = [...this.keys.values()].filter((k) => k.retiredAt === null).sort((a, b) => b.createdAt - a.createdAt)[0];
    if (!key) throw new AppError('unavailable', 'No signing key this gateway can open is active; see its /readyz.');
    return { kid: key.kid, secret: key.secret };
  }

  /** 'active' verifies; 'retired' once did; 'unknown' never existed here (or cannot be opened here). */
  status(kid: string | undefined): 'active' | 'retired' | 'unknown' {
    const key = kid === undefined ? undefined : this.keys.get(kid);
    if (!key) return this.cannotOpen.some((k) => k.kid === kid && k.retiredAt !== null) ? 'retired' : 'unknown';
    return key.retiredAt === null ? 'active' : 'retired';
  }

  /** The secret of an active key, for verification. */
  secret(kid: string): Uint8Array | undefined {
    const key = this.keys.get(kid);
    return key && key.retiredAt === null ? key.secret : undefined;
  }

  /**
   * At start: a KekError when there are active keys and this process opens none of them (its
   * SIGNING_KEK_FILE is not the deployment's): a gateway that could check no token must not start.
   */
  opensSome(): void {
    const active = this.cannotOpen.filter((k) => k.retiredAt === null);
    if (active.length > 0 && ![...this.keys.values()].some((k) => k.retiredAt === null)) throw new KekError(active[0]!.reason);
  }

  /** The active keys this process cannot open, as /readyz says them (null: none). */
  problem(): string | null {
    const active = this.cannotOpen.filter((k) => k.retiredAt === null);
    if (active.length === 0) return null;
    return active.map((k) => `signing key ${k.kid} cannot be opened here (${k.reason})`).join('; ');
  }

  /** How many active keys this process cannot open. */
  get unreadable(): number {
    return this.cannotOpen.filter((k) => k.retiredAt === null).length;
  }
}
