// The audience-token signing secrets at rest: sealed under SIGNING_KEK_FILE. Nothing Redis holds
// (every string of every key of the deployment, as stored and as a DUMP serializes it, each also
// read as base64) verifies a token's signature; the KEK opens them. A gateway without the KEK, or
// with another one, refuses to start naming the file; audiencectl signing-keys rewrap moves them to
// a new KEK, under which tokens minted before still verify.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jwtVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import { ensureKekFile, kekFromBytes, loadKek } from '../../gateway/store/signing-kek.js';
import { publishInvalidation } from '../../gateway/store/invalidation.js';
import { sample, scrape } from '../helpers/metrics.js';
import { audiencectl, audiencectlJson } from '../helpers/cli.js';
import { GATEWAY_BIN, spawnGateway } from '../helpers/gateway-process.js';
import { eventually, mintToken, postAction, postJson, startTestGateway, testKekFile, useGatewayWithToken } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
const g = useGatewayWithToken(() => redis.get().server.url);

/** Every string Redis holds under the prefix: values as stored, and the bytes DUMP gives. */
async function everythingStored(prefix: string): Promise<string[]> {
  const c = redis.get().client;
  const out: string[] = [];
  for (const key of await c.keys(`${prefix}*`)) {
    const dump = await c.dumpBuffer(key);
    if (dump) out.push(dump.toString('latin1'));
    const type = await c.type(key);
    if (type === 'string') out.push((await c.get(key))!);
    if (type === 'hash') out.push(...Object.entries(await c.hgetall(key)).flat());
  }
  return out;
}

/** Every candidate key in a text: the text, each run of base64/hex-looking characters, and those decoded. */
function candidates(texts: string[]): Uint8Array[] {
  const keys: Uint8Array[] = [];
  for (const text of texts) {
    keys.push(Buffer.from(text));
    for (const [run] of text.matchAll(/[A-Za-z0-9+/_=-]{16,}/g)) {
      keys.push(Buffer.from(run), Buffer.from(run, 'base64url'), Buffer.from(run, 'base64'));
      if (/^[0-9a-f]+$/i.test(run)) keys.push(Buffer.from(run, 'hex'));
    }
  }
  return keys;
}

const verifies = (key: Uint8Array) => jwtVerify(g.token, key).then(() => true, () => false);
const gatewayExit = (env: Record<string, string>, ...args: string[]) =>
  new Promise<{ code: number; out: string }>((resolve) => {
    execFile(process.execPath, [GATEWAY_BIN, ...args], { env: { PATH: process.env.PATH ?? '', PORT: '0', OPS_PORT: '0', REDIS_URL: redis.get().server.url, REDIS_PREFIX: g.t.config.redisPrefix, ...env }, timeout: 10_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
    );
  });

describe('signing secrets at rest', () => {
  it('no string Redis holds verifies a token, while the KEK opens the sealed record into the key that does', async () => {
    const stored = await everythingStored(g.t.config.redisPrefix);
    expect(stored.join('')).toContain('"sealed"');
    const tried = candidates(stored);
    expect(tried.length).toBeGreaterThan(20);
    for (const key of tried) expect(await verifies(key)).toBe(false);
    // the control: with the KEK, the stored record yields the key the token verifies with
    const { current, keys } = await g.t.admin.signingKeys.load();
    expect(await verifies(keys.find((k) => k.kid === current)!.secret)).toBe(true);
  });

  it('a gateway without SIGNING_KEK_FILE, or with one that is not a key, does not start (exit 2, --check-config too), naming it', async () => {
    for (const args of [[], ['--check-config']]) {
      const missing = await gatewayExit({ SIGNING_KEK_FILE: '' }, ...args);
      expect([missing.code, missing.out]).toEqual([2, expect.stringMatching(/SIGNING_KEK_FILE is not set/)]);
      const unreadable = await gatewayExit({ SIGNING_KEK_FILE: '/nonexistent/kek' }, ...args);
      expect([unreadable.code, unreadable.out]).toEqual([2, expect.stringMatching(/SIGNING_KEK_FILE: cannot read \/nonexistent\/kek \(ENOENT\)/)]);
    }
    const notAKey = join(mkdtempSync(join(tmpdir(), 'ac-kek-')), 'kek');
    writeFileSync(notAKey, 'hunter2\n', { mode: 0o600 });
    const malformed = await gatewayExit({ SIGNING_KEK_FILE: notAKey });
    expect([malformed.code, malformed.out]).toEqual([2, expect.stringMatching(/must hold 32 random bytes/)]);
  });

  it('refuses a KEK file that others, or a group it is not in, can read, and a degenerate key (exit 2, --check-config too); takes 0600 and 0640 of its own group', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ac-kek-'));
    const kekAt = (name: string, text: string, mode: number, gid?: number) => {
      const file = join(dir, name);
      writeFileSync(file, text, { mode });
      chmodSync(file, mode); // past the umask
      if (gid !== undefined) chownSync(file, process.getuid!(), gid);
      return file;
    };
    const good = randomBytes(32).toString('hex');
    const strangers = [0, ...process.getgroups!()].reduce((a, b) => Math.max(a, b), 0) + 4242; // a group this process is not in
    for (const args of [[], ['--check-config']]) {
      for (const [name, mode, gid] of [['world', 0o644, undefined], ['world-only', 0o604, undefined], ['others-group', 0o640, strangers]] as const) {
        const refused = await gatewayExit({ SIGNING_KEK_FILE: kekAt(`${name}${args.length}`, good, mode, gid) }, ...args);
        expect([refused.code, refused.out]).toEqual([2, expect.stringMatching(/can be read by (others|group \d+, which this process is not in): chmod 600/)]);
      }
      for (const [name, text] of [['zeros', '0'.repeat(64)], ['ones', 'f'.repeat(64)], ['counting', Buffer.from(Array.from({ length: 32 }, (_, i) => i)).toString('hex')], ['pattern', '0123456789abcdef'.repeat(4)]] as const) {
        const weak = await gatewayExit({ SIGNING_KEK_FILE: kekAt(`${name}${args.length}`, text, 0o600) }, ...args);
        expect([weak.code, weak.out]).toEqual([2, expect.stringMatching(/is not a random key/)]);
      }
    }
    expect(() => loadKek(kekAt('own', good, 0o600))).not.toThrow();
    expect(() => loadKek(kekAt('own-group', good, 0o640, process.getgid!()))).not.toThrow();
  }, 90_000); // 14 gateway processes started one after another: past 30 s once beside a busy neighbour

  it('a gateway given another KEK refuses to start, naming the file; rewrap moves the keys to a new KEK, under which earlier tokens still verify', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ac-kek-'));
    const other = ensureKekFile(join(dir, 'other'));
    const wrong = await gatewayExit({ SIGNING_KEK_FILE: other });
    expect(wrong.code).toBe(1);
    expect(wrong.out).toContain(`SIGNING_KEK_FILE (${other}) holds ${loadKek(other).id}`);
    // rewrap to a new KEK with audiencectl (holding the current one)
    const env = { REDIS_URL: redis.get().server.url, REDIS_PREFIX: g.t.config.redisPrefix, SIGNING_KEK_FILE: testKekFile() };
    const next = ensureKekFile(join(dir, 'next'));
    const rewrapped = await audiencectlJson(env, 'signing-keys', 'rewrap', '--new-kek-file', next);
    expect(rewrapped).toEqual({ rewrapped: 1, kek: loadKek(next).id });
    const records = Object.values(await redis.get().client.hgetall(g.t.admin.keys.signingKeys())).map((r) => JSON.parse(r) as { sealed: { kek: string } });
    expect(records.map((r) => r.sealed.kek)).toEqual([loadKek(next).id]);
    // a gateway on the new KEK accepts the token minted before; the old KEK no longer starts one
    const moved = await spawnGateway({ REDIS_URL: redis.get().server.url, REDIS_PREFIX: g.t.config.redisPrefix, SIGNING_KEK_FILE: next });
    try {
      expect((await postAction(moved, g.token, { layoutId: g.t.layoutId, lid: 1, type: 'Button' })).status).toBe(200);
      expect((await audiencectlJson({ ...env, SIGNING_KEK_FILE: next }, 'signing-key', 'rotate')).kid).toMatch(/^sk_/);
    } finally {
      moved.child.kill('SIGTERM');
    }
    expect((await gatewayExit({ SIGNING_KEK_FILE: testKekFile() })).code).toBe(1);
    // audiencectl without a KEK still lists keys, and says what is missing when it needs one
    expect((await audiencectlJson({ REDIS_URL: env.REDIS_URL, REDIS_PREFIX: env.REDIS_PREFIX, SIGNING_KEK_FILE: '' }, 'signing-key', 'list')).keys).toHaveLength(2);
    const rotate = await audiencectl({ REDIS_URL: env.REDIS_URL, REDIS_PREFIX: env.REDIS_PREFIX, SIGNING_KEK_FILE: '' }, 'signing-key', 'rotate');
    expect([rotate.code, rotate.stderr]).toEqual([2, expect.stringMatching(/SIGNING_KEK_FILE is not set/)]);
  });

  it('audiencectl refuses to write a signing key under a KEK that does not match the stored keys, naming both; nothing changes', async () => {
    const t = await startTestGateway({ redisUrl: redis.get().server.url });
    try {
      const dir = mkdtempSync(join(tmpdir(), 'ac-kek-'));
      const stale = ensureKekFile(join(dir, 'stale'));
      const before = await t.admin.signingKeys.list();
      const env = { REDIS_URL: redis.get().server.url, REDIS_PREFIX: t.config.redisPrefix, SIGNING_KEK_FILE: stale };
      const r = await audiencectl(env, 'signing-key', 'rotate');
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`sealed under key-encryption key ${loadKek(testKekFile()).id}`);
      expect(r.stderr).toContain(`SIGNING_KEK_FILE (${stale}) holds ${loadKek(stale).id}`);
      expect(await t.admin.signingKeys.list()).toEqual(before);
      // with the gateways' KEK it rotates
      expect((await audiencectlJson({ ...env, SIGNING_KEK_FILE: testKekFile() }, 'signing-key', 'rotate')).kid).toMatch(/^sk_/);
    } finally {
      await t.close();
    }
  });

  it('a key no gateway can open: the gateway loads the others, says so in /readyz and a metric, and a retirement still takes effect', async () => {
    const t = await startTestGateway({ redisUrl: redis.get().server.url });
    try {
      const token = await mintToken(t, t.layoutId, t.apiKey);
      const old = (await t.admin.signingKeys.list()).find((k) => k.current)!.kid;
      // a key sealed under a KEK no gateway has, made current (as a rotate under the wrong KEK did)
      const kid = 'sk_unreadable1';
      const sealed = kekFromBytes(randomBytes(32), 'elsewhere').seal(kid, randomBytes(32));
      const c = redis.get().client;
      await c.multi().hset(t.admin.keys.signingKeys(), kid, JSON.stringify({ sealed, createdAt: Date.now() })).set(t.admin.keys.currentSigningKey(), kid).exec();
      await publishInvalidation(c, t.admin.keys, { kind: 'signing-keys' });
      const readyz = () => fetch(`http://127.0.0.1:${t.gw.opsPort}/readyz`).then((r) => r.text());
      await eventually(async () => (await readyz()).includes(`signing key ${kid} cannot be opened`));
      expect(sample(await scrape(t.gw.opsPort), 'audience_gateway_signing_keys_unreadable')).toBe(1);
      const act = (tok: string) => postAction(t, tok, { layoutId: t.layoutId, lid: 1, type: 'Button' });
      expect((await act(token)).status).toBe(200); // the keys it can open keep verifying
      expect((await act(await mintToken(t, t.layoutId, t.apiKey))).status).toBe(200); // and the newest of them signs
      // the leaked key's retirement takes effect although another key cannot be opened
      await t.admin.signingKeys.retire(old);
      await eventually(async () => (await act(token)).status === 401);
      const minted = await postJson(`${t.url}/token`, { layoutId: t.layoutId }, { 'x-api-key': t.apiKey });
      expect([minted.status, minted.body.error?.code]).toEqual([503, 'unavailable']); // nothing left to sign with
    } finally {
      await t.close();
    }
  });
});

