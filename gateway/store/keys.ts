// The only place the gateway builds Redis key and channel names (the stream and presence names
// shared with the bridge come from schemas/redis-keys.ts). Every key names its owner in a hash
// tag: {layoutId}, {teamId}, {keyId}, {email}, {session hash}, or one fixed tag for the signing
// keys and for the team registry. A command, transaction or Lua script touches the keys of one
// owner only, so the same code runs on one Redis and on Redis Cluster (where a tag is a slot).
import { actionStreamKey, layoutKey, lightStreamKey, presenceKey, cueStateKey, showRecordKey, showRecordStateKey } from '../../schemas/redis-keys.js';

export class RedisKeys {
  constructor(readonly prefix: string) {}

  /** Hash teamId -> team JSON ({name, createdAt}): the registry of teams (one key, one slot). */
  teams(): string {
    return `${this.prefix}{teams}`;
  }
  /** Set of the team's layoutIds (an index: each layout's own hash is the record). */
  teamLayouts(teamId: string): string {
    return `${this.prefix}team:{${teamId}}:layouts`;
  }
  /** Set of the team's keyIds (an index). */
  teamKeys(teamId: string): string {
    return `${this.prefix}team:{${teamId}}:keys`;
  }
  /** Set of the team's administrator emails (an index). */
  teamAdmins(teamId: string): string {
    return `${this.prefix}team:{${teamId}}:admins`;
  }
  /** Hash: team, name, activePageId, pages (JSON), updatedAt, version (schemas/redis-keys.ts). */
  layout(layoutId: string): string {
    return layoutKey(this.prefix, layoutId);
  }
  /** Stream of the looks of the layout's light canvas (schemas/redis-keys.ts). */
  lightStream(layoutId: string): string {
    return lightStreamKey(this.prefix, layoutId);
  }
  /** Hash process -> JSON {at, zones}: each gateway process's counts of the layout's phones by clock uncertainty (clock-figures.ts). */
  clockFigures(layoutId: string): string {
    return `${this.prefix}layout:{${layoutId}}:clock`;
  }
  /** Hash sub -> revokedAt (ms): the layout's audience tokens revoked one participant at a time. */
  revokedSubs(layoutId: string): string {
    return `${this.prefix}layout:{${layoutId}}:revoked-subs`;
  }
  /** Hash sub -> until (ms): participants whose Strings are refused (moderation mute). */
  mutedSubs(layoutId: string): string {
    return `${this.prefix}layout:{${layoutId}}:muted-subs`;
  }
  /**
   * The layout's moderation queue: `queue` (sorted set id -> held at), `items` (hash id -> JSON),
   * `subs` (hash sub -> JSON array of the participant's queued ids), `decided` (hash id -> the
   * decision's JSON) and `decidedOrder` (sorted set id -> decided at).
   */
  moderation(layoutId: string): { queue: string; items: string; subs: string; decided: string; decidedOrder: string } {
    const base = `${this.prefix}layout:{${layoutId}}:moderation`;
    return { queue: base, items: `${base}:items`, subs: `${base}:subs`, decided: `${base}:decided`, decidedOrder: `${base}:decided-order` };
  }
  actions(layoutId: string): string {
    return actionStreamKey(this.prefix, layoutId);
  }
  /**
   * Hash Idempotency-Key -> the action's fingerprint: the keys one participant (`sub`) used on the
   * layout in one window (`generation` = the window's number since the epoch), expiring.
   */
  actionOnce(layoutId: string, sub: string, generation: number): string {
    return `${this.prefix}layout:{${layoutId}}:once:${sub}:${generation}`;
  }
  cues(layoutId: string): string {
    return cueStateKey(this.prefix, layoutId);
  }
  /** The layout's show record (a stream) and its state (a hash): schemas/show-record.ts. */
  showRecord(layoutId: string): { stream: string; state: string } {
    return { stream: showRecordKey(this.prefix, layoutId), state: showRecordStateKey(this.prefix, layoutId) };
  }
  destinations(layoutId: string): string {
    return presenceKey(this.prefix, layoutId);
  }
  /** Hash: team, name, secretHash, scope (JSON), createdAt, lastUsedAt, revokedAt (the revocation lives in the record). */
  apiKey(keyId: string): string {
    return `${this.prefix}apikey:{${keyId}}`;
  }
  /** Hash kid -> signing key JSON ({secret, createdAt, retiredAt}). */
  signingKeys(): string {
    return `${this.prefix}{signing-keys}`;
  }
  /** String: the kid new tokens are signed with (same tag as the keys: one transaction writes both). */
  currentSigningKey(): string {
    return `${this.prefix}{signing-keys}:current`;
  }
  /** Hash: team, passwordHash, createdAt. The email is lower-cased. */
  admin(email: string): string {
    return `${this.prefix}admin:{${email}}`;
  }
  /** Set of the hashed session ids an administrator holds (to end them on a password reset). */
  adminSessions(email: string): string {
    return `${this.prefix}admin:{${email}}:sessions`;
  }
  /** Hash: email, team, csrf, createdAt; expires after the idle timeout. Keyed by SHA-256 of the session id. */
  session(sessionHash: string): string {
    return `${this.prefix}session:{${sessionHash}}`;
  }
  /** Counter of failed sign-ins (`account` or `address`), expiring with the window. */
  loginFailures(kind: 'account' | 'address', who: string): string {
    return `${this.prefix}login-failures:{${kind}:${who}}`;
  }
  /** Pub/sub channel of cache invalidations (see store/cache-sync.ts for the messages). */
  /**
   * The layout's sharded pub/sub channel (SPUBLISH/SSUBSCRIBE), in the layout's hash slot: the
   * crowd summaries of every gateway process, for the live channel's sockets on every process.
   */
  liveChannel(layoutId: string): string {
    return `${this.prefix}layout:{${layoutId}}:live`;
  }
  /**
   * String: the gateway process that holds the participant in the layout (participant-claims.ts):
   * counts it in the crowd, keeps its budget and its sockets; expiring a while after its last claim.
   */
  participantOwner(layoutId: string, sub: string): string {
    return `${this.prefix}layout:{${layoutId}}:owner:${sub}`;
  }
  /** Counter of the layout's participant claims: orders the moves of one participant. */
  participantClaims(layoutId: string): string {
    return `${this.prefix}layout:{${layoutId}}:claims`;
  }
  /** Counter of the participant's live sockets opened in the current minute, over every process. */
  participantOpens(layoutId: string, sub: string): string {
    return `${this.prefix}layout:{${layoutId}}:opens:${sub}`;
  }
  /**
   * A gateway process's sharded channel for one layout (in the layout's slot): the participants
   * another process took from it, and what is handed to it with those it took.
   */
  processChannel(layoutId: string, source: string): string {
    return `${this.prefix}layout:{${layoutId}}:process:${source}`;
  }
  invalidationChannel(): string {
    return `${this.prefix}invalidate`;
  }
}

/**
 * The key names written before every key carried its owner's hash tag (version 0.1), for
 * `audiencectl migrate` (store/migrate.ts). Nothing else may use them.
 */
export class LegacyRedisKeys {
  constructor(readonly prefix: string) {}
  teams = () => `${this.prefix}teams`;
  teamLayouts = (teamId: string) => `${this.prefix}team:${teamId}:layouts`;
  teamKeys = (teamId: string) => `${this.prefix}team:${teamId}:keys`;
  teamAdmins = (teamId: string) => `${this.prefix}team:${teamId}:admins`;
  apiKey = (keyId: string) => `${this.prefix}apikey:${keyId}`;
  revokedKeys = () => `${this.prefix}apikeys:revoked`;
  signingKeys = () => `${this.prefix}signing-keys`;
  currentSigningKey = () => `${this.prefix}signing-keys:current`;
  admin = (email: string) => `${this.prefix}admin:${email}`;
  adminSessions = (email: string) => `${this.prefix}admin:${email}:sessions`;
  session = (sessionHash: string) => `${this.prefix}session:${sessionHash}`;
}
