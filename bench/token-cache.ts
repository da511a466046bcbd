// What the verified-token cache costs and saves, on the gateway's own AudienceTokens: N tokens are
// minted as /token mints them (one layout, one API key, each its own sub; the CPU a mint takes is
// reported too), then verified twice. The first pass is all misses (jose checks each signature, and
// the entry is cached); the second is all hits. Between them, garbage is collected and the heap's
// growth is divided by N: the bytes one cached token takes. Runs in one Node process with
// --expose-gc, no Redis (the signing key is held in memory, as the keyring holds it once loaded).
//   npm run bench:lab -- token-cache [--tokens 100000]
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { AuthedKey } from '../gateway/auth/api-keys.js';
import { AudienceTokens } from '../gateway/auth/audience-tokens.js';
import { type AudienceClaims } from '../gateway/auth/token-claims.js';
import { SigningKeyring } from '../gateway/auth/signing-keyring.js';
import type { SigningKeyStore } from '../gateway/store/signing-keys.js';

const { values } = parseArgs({ options: { tokens: { type: 'string', default: '100000' }, child: { type: 'boolean', default: false } } });
const N = Number(values.tokens);
if (!Number.isInteger(N) || N <= 1000) throw new Error(`--tokens must be a whole number above 1,000 (the first 1,000 warm the code), not ${values.tokens}`);

/** µs per token, wall and CPU (every thread of the process), each token's verification awaited before the next (a hit answers synchronously). */
async function verifyAll(tokens: AudienceTokens, list: string[]): Promise<{ wall: number; cpu: number }> {
  const cpu = process.cpuUsage();
  const started = process.hrtime.bigint();
  for (const t of list) {
    const claims: AudienceClaims | Promise<AudienceClaims> = tokens.verify(t);
    if (claims instanceof Promise) await claims;
  }
  const used = process.cpuUsage(cpu);
  return { wall: Number(process.hrtime.bigint() - started) / 1000 / list.length, cpu: (used.user + used.system) / list.length };
}

async function measure(): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc!;
  const heap = () => {
    gc();
    gc();
    return process.memoryUsage().heapUsed;
  };
  const key = { kid: 'sk_bench', secret: new Uint8Array(randomBytes(32)), createdAt: Date.now(), retiredAt: null };
  const store = { load: () => Promise.resolve({ keys: [key], current: key.kid }), ensureCurrent: () => Promise.resolve() } as unknown as SigningKeyStore;
  const keyring = new SigningKeyring(store);
  await keyring.reload();
  const settings = { issuer: 'audience-control', audience: 'audience', ttlSeconds: 3600, cacheMax: N * 2, renewGraceSeconds: 0 };
  const tokens = new AudienceTokens(settings, keyring, { isRevoked: () => false, trackTokenKey: () => Promise.resolve() });
  const apiKey: AuthedKey = { keyId: 'ak_bench', teamId: 'team_bench', scope: { kind: 'team' } };
  const list: string[] = [];
  const cpu = process.cpuUsage();
  // kept flat, as a request's token arrives (jose's is a string of joined parts, flattened by the first read, which would free memory while measuring)
  for (let i = 0; i < N; i++) list.push(Buffer.from((await tokens.mint(apiKey, 'show')).token).toString('latin1'));
  const used = process.cpuUsage(cpu);
  const mintUs = (used.user + used.system) / N;
  await verifyAll(tokens, list.slice(0, 1000)); // warms the code paths; these 1,000 stay cached and are hits below
  const before = heap();
  const miss = await verifyAll(tokens, list.slice(1000));
  const bytes = (heap() - before) / (N - 1000);
  const hit = await verifyAll(tokens, list);
  const chars = list.reduce((sum, t) => sum + t.length, 0) / N;
  console.log(JSON.stringify({ bytes, miss, hit, chars, mintUs }));
}

if (values.child) {
  await measure();
} else {
  const out = execFileSync(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), '--child', '--tokens', String(N)], { encoding: 'utf8' });
  type Us = { wall: number; cpu: number };
  const r = JSON.parse(out) as { bytes: number; miss: Us; hit: Us; chars: number; mintUs: number };
  console.log(`The verified-token cache, ${N.toLocaleString('en')} tokens of ${r.chars.toFixed(0)} characters, Node ${process.version}, ${new Date().toISOString().slice(0, 16)} UTC:\n`);
  console.log('| figure | measured |\n|---|---|');
  console.log(`| mint (jose signs in WebCrypto) | ${r.mintUs.toFixed(1)} µs of CPU |`);
  console.log(`| heap per cached token (after GC) | ${r.bytes.toFixed(0)} bytes |`);
  console.log(`| verify, a miss (jose checks the signature in WebCrypto, then the entry is cached) | ${r.miss.cpu.toFixed(1)} µs of CPU, ${r.miss.wall.toFixed(1)} µs awaited |`);
  console.log(`| verify, a hit | ${r.hit.cpu.toFixed(2)} µs of CPU, ${r.hit.wall.toFixed(2)} µs |`);
}
