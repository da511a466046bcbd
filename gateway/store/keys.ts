// The only place the gateway builds Redis key and channel names (the stream and presence names
// shared with the bridge come from schemas/redis-keys.ts). Every key of one layout carries the
// hash tag {layoutId}, so Redis Cluster keeps all of a layout on one shard.
import { actionStreamKey, presenceKey } from '../../schemas/redis-keys.js';

export class RedisKeys {
  constructor(readonly prefix: string) {}

  /** Hash teamId -> team JSON ({name, createdAt}). */
  teams(): string {
    return `${this.prefix}teams`;
  }
  /** Set of the team's layoutIds. */
  teamLayouts(teamId: string): string {
    return `${this.prefix}team:${teamId}:layouts`;
  }
  /** Set of the team's keyIds. */
  teamKeys(teamId: string): string {
    return `${this.prefix}team:${teamId}:keys`;
  }
  /** Hash: team, name, activePageId, pages (JSON), updatedAt, version. */
  layout(layoutId: string): string {
    return `${this.prefix}layout:{${layoutId}}`;
  }
  actions(layoutId: string): string {
    return actionStreamKey(this.prefix, layoutId);
  }
  destinations(layoutId: string): string {
    return presenceKey(this.prefix, layoutId);
  }
  /** Hash: team, name, secretHash, scope (JSON), createdAt, lastUsedAt, revokedAt. */
  apiKey(keyId: string): string {
    return `${this.prefix}apikey:${keyId}`;
  }
  /** Set of every revoked keyId, loaded whole by each gateway. */
  revokedKeys(): string {
    return `${this.prefix}apikeys:revoked`;
  }
  /** Hash kid -> signing key JSON ({secret, createdAt, retiredAt}). */
  signingKeys(): string {
    return `${this.prefix}signing-keys`;
  }
  /** String: the kid new tokens are signed with. */
  currentSigningKey(): string {
    return `${this.prefix}signing-keys:current`;
  }
  /** Hash: team, passwordHash, createdAt. The email is lower-cased. */
  admin(email: string): string {
    return `${this.prefix}admin:${email}`;
  }
  /** Set of the team's administrator emails. */
  teamAdmins(teamId: string): string {
    return `${this.prefix}team:${teamId}:admins`;
  }
  /** Set of the hashed session ids an administrator holds (to end them on a password reset). */
  adminSessions(email: string): string {
    return `${this.prefix}admin:${email}:sessions`;
  }
  /** Hash: email, team, csrf, createdAt; expires after the idle timeout. Keyed by SHA-256 of the session id. */
  session(sessionHash: string): string {
    return `${this.prefix}session:${sessionHash}`;
  }
  /** Counter of failed sign-ins (`account` or `address`), expiring with the window. */
  loginFailures(kind: 'account' | 'address', who: string): string {
    return `${this.prefix}login-failures:${kind}:${who}`;
  }
  /** Pub/sub channel of cache invalidations (see sync/invalidation.ts for the messages). */
  invalidationChannel(): string {
    return `${this.prefix}invalidate`;
  }
}
