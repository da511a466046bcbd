// Data written by version 0.1 (test/fixtures/legacy-0.1-control-plane.json: every control-plane key
// its stores wrote, dumped from a real Redis) moves to the tagged key names, at gateway start or with
// `audiencectl migrate`, and keeps working: teams, layouts, keys (allow-list and revocation), signing
// keys (a token signed before still verifies), the administrator, the session.
import { readFileSync } from 'node:fs';
import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { RedisKeys } from '../../gateway/store/keys.js';
import { audiencectl } from '../helpers/cli.js';
import { call, postAction, postJson, startTestGateway } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
interface Fixture {
  known: { prefix: string; teamId: string; teamKey: string; listKey: string; revokedKeyId: string; firstKid: string; adminEmail: string; adminPassword: string; sessionId: string };
  keys: { key: string; type: 'hash' | 'set' | 'string'; ttlMs: number | null; value: Record<string, string> | string[] | string }[];
}
const fixture = JSON.parse(readFileSync(new URL('../fixtures/legacy-0.1-control-plane.json', import.meta.url), 'utf8')) as Fixture;

/** Loads the 0.1 keys under a fresh prefix (so each test has its own copy), sessions renewed to now. */
async function load(prefix: string): Promise<void> {
  const c = redis.get().client;
  for (const k of fixture.keys) {
    const key = prefix + k.key.slice(fixture.known.prefix.length);
    if (k.type === 'hash') {
      const value = { ...(k.value as Record<string, string>) };
      if (value.csrf) value.createdAt = String(Date.now()); // a session: keep it within its absolute timeout
      await c.hset(key, value);
    } else if (k.type === 'set') await c.sadd(key, ...(k.value as string[]));
    else await c.set(key, k.value as string);
    if (k.ttlMs) await c.pexpire(key, k.ttlMs);
  }
}

async function legacyKeysLeft(prefix: string): Promise<string[]> {
  return (await redis.get().client.keys(`${prefix}*`)).filter((k) => !k.includes('{'));
}

describe('migration of 0.1 data', () => {
  it('audiencectl migrate moves every key, twice is harmless, and the data keeps working', async () => {
    const prefix = `m${Math.random().toString(36).slice(2, 8)}:`;
    await load(prefix);
    expect((await legacyKeysLeft(prefix)).length).toBeGreaterThan(10); // everything but the layouts, which are tagged already
    const env = { REDIS_URL: redis.get().server.url, REDIS_PREFIX: prefix };
    const first = await audiencectl(env, 'migrate', '--json');
    expect(first.code).toBe(0);
    expect(first.json.moved).toBeGreaterThan(10);
    expect((await legacyKeysLeft(prefix)).filter((k) => !k.includes('login-failures'))).toEqual([]); // sign-in counters just expire
    // the signing secrets 0.1 stored in plain are sealed under SIGNING_KEK_FILE
    const plainKeys = Object.keys(fixture.keys.find((k) => k.key === `${fixture.known.prefix}signing-keys`)!.value as Record<string, string>);
    expect(first.json.sealed).toBe(plainKeys.length);
    const records = Object.values(await redis.get().client.hgetall(new RedisKeys(prefix).signingKeys())).map((r) => JSON.parse(r) as Record<string, unknown>);
    expect(records.map((r) => [typeof r.sealed, 'secret' in r])).toEqual(plainKeys.map(() => ['object', false]));
    const again = await audiencectl(env, 'migrate', '--json');
    expect(again.json).toEqual({ moved: 0, sealed: 0 });

    const teams = await audiencectl(env, 'team', 'list', '--json');
    expect(teams.json.teams.map((t: { teamId: string }) => t.teamId).sort()).toEqual(expect.arrayContaining([fixture.known.teamId]));
    const keys = await audiencectl(env, 'key', 'list', '--team', fixture.known.teamId, '--json');
    expect(keys.json.keys).toHaveLength(3);
    expect(keys.json.keys.find((k: { keyId: string }) => k.keyId === fixture.known.revokedKeyId).revokedAt).not.toBeNull();
    const layouts = await audiencectl(env, 'layout', 'list', '--team', fixture.known.teamId, '--json');
    expect(layouts.json.layouts.map((l: { layoutId: string }) => l.layoutId)).toEqual(['demo-show', 'legacy-two']);
  });

  it('a gateway started on 0.1 data migrates it first: keys, allow-lists, revocation, old tokens, admin and session all work', async () => {
    const prefix = `g${Math.random().toString(36).slice(2, 8)}:`;
    await load(prefix);
    const t = await startTestGateway({ redisUrl: redis.get().server.url, sameDataAs: { config: { redisPrefix: prefix } as never, teamId: fixture.known.teamId, apiKey: fixture.known.teamKey, keyId: '', layoutId: 'demo-show' } });
    try {
      expect((await legacyKeysLeft(prefix)).filter((k) => !k.includes('login-failures'))).toEqual([]);
      // the whole-team key sees both layouts; the allow-list key only its one; the revoked key nothing
      expect((await call(`${t.url}/layout/demo-show`, { headers: { 'x-api-key': fixture.known.teamKey } })).status).toBe(200);
      expect((await call(`${t.url}/layout/legacy-two`, { headers: { 'x-api-key': fixture.known.listKey } })).body.activePageId).toBe('encore');
      expect((await call(`${t.url}/layout/demo-show`, { headers: { 'x-api-key': fixture.known.listKey } })).status).toBe(404);
      // a token signed before the migration with the first (older, still active) signing key verifies
      const keyring = fixture.keys.find((k) => k.key === `${fixture.known.prefix}signing-keys`)!.value as Record<string, string>;
      const secret = Buffer.from((JSON.parse(keyring[fixture.known.firstKid]!) as { secret: string }).secret, 'base64url');
      const teamKeyId = fixture.known.teamKey.split('.')[0]!;
      /** A token as 0.1 minted it, signed with the first signing key. */
      const tokenOf0_1 = (keyId: string) =>
        new SignJWT({ layoutId: 'demo-show', team: fixture.known.teamId, keyId })
          .setProtectedHeader({ alg: 'HS256', typ: 'audience+jwt', kid: fixture.known.firstKid })
          .setIssuer(t.config.tokenIssuer)
          .setAudience(t.config.tokenAudience)
          .setSubject(`aud_of_${keyId}`)
          .setIssuedAt()
          .setExpirationTime('1h')
          .sign(secret);
      expect((await postAction(t, await tokenOf0_1(teamKeyId), { layoutId: 'demo-show', lid: 1, type: 'Button' })).status).toBe(200);
      // one minted for the revoked key does not: its revocation moved into the key's record
      const ofRevoked = await tokenOf0_1(fixture.known.revokedKeyId);
      const refused = await postAction(t, ofRevoked, { layoutId: 'demo-show', lid: 1, type: 'Button' });
      expect([refused.status, refused.body.error.code]).toEqual([401, 'token_revoked']);
      // the administrator signs in with the old password; the old session is still live
      const signin = await postJson(`${t.url}/admin/api/login`, { email: fixture.known.adminEmail, password: fixture.known.adminPassword });
      expect(signin.status).toBe(200);
      const session = await call(`${t.url}/admin/api/session`, { headers: { cookie: `ac_session=${fixture.known.sessionId}` } });
      expect(session.status).toBe(200);
      expect(session.body.email).toBe(fixture.known.adminEmail);
      // and every key now carries its owner's hash tag
      const keys = new RedisKeys(prefix);
      expect(await redis.get().client.exists(keys.apiKey(teamKeyId), keys.signingKeys(), keys.admin(fixture.known.adminEmail), keys.teams())).toBe(4);
    } finally {
      await t.close();
    }
  });
});
