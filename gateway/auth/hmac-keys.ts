// The signing secrets as WebCrypto keys, each imported once: given the raw bytes, jose imports them
// on every signature and verification.
import { webcrypto } from 'node:crypto';

export class HmacKeys {
  private readonly keys = new WeakMap<Uint8Array, Promise<webcrypto.CryptoKey>>();

  /** The secret's imported key; a secret that is not bytes (a broken keyring) throws a TypeError before anything is imported or kept. */
  of(secret: Uint8Array): Promise<webcrypto.CryptoKey> {
    if (!(secret instanceof Uint8Array)) throw new TypeError(`a signing secret is bytes, not ${typeof secret}`);
    let key = this.keys.get(secret);
    if (key === undefined) {
      key = webcrypto.subtle.importKey('raw', secret, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
      this.keys.set(secret, key);
    }
    return key;
  }
}
