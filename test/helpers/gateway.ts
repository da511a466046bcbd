// An in-process gateway on port 0 over a real Redis, with a seeded team, layout and API key,
// and small HTTP helpers built on fetch.
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { startGateway, type Gateway } from '../../gateway/app.js';
import { configProperties, loadConfig, type GatewayConfig } from '../../gateway/config.js';
import { BENCH_LIMITS } from '../../bench/limits.js';
import { createLogger, type Logger } from '../../runtime/log.js';
import { loadKek } from '../../gateway/store/signing-kek.js';
import { createStores, type Stores } from '../../gateway/store/stores.js';
import type { LayoutDefinition } from '../../schemas/types.js';
import { randomPrefix } from './redis.js';
import { LOADED_MACHINE_MS } from './loaded-machine.js';

/** A layout with every control type on two pages and no crowd (the demo layout adds crowd controls and zones to it): most tests' layout. */
/** The test run's key-encryption key file (test/global-setup.ts makes it). */
export function testKekFile(): string {
  const file = process.env.SIGNING_KEK_FILE;
  if (!file) throw new Error('SIGNING_KEK_FILE is not set: test/global-setup.ts makes it for the run');
  return file;
}

export const DEMO_LAYOUT = JSON.parse(readFileSync(new URL('../fixtures/all-controls-layout.json', import.meta.url), 'utf8')) as LayoutDefinition;

export interface TestGateway {
  gw: Gateway;
  url: string;
  config: GatewayConfig;
  /** stores on their own connection, as audiencectl would use them */
  admin: Stores;
  teamId: string;
  apiKey: string;
  keyId: string;
  layoutId: string;
  close(): Promise<void>;
}

export interface TestGatewayOptions {
  redisUrl: string;
  prefix?: string;
  overrides?: Partial<GatewayConfig>;
  now?: () => number;
  /** a layout to import instead of the demo layout */
  layout?: LayoutDefinition;
  /** the gateway's logger (default: silent) */
  log?: Logger;
  /** another instance on existing data: skip seeding and reuse these ids */
  sameDataAs?: Pick<TestGateway, 'teamId' | 'apiKey' | 'keyId' | 'layoutId' | 'config'>;
}

/**
 * Per-participant and per-key limits far above what any test sends: most tests send many actions
 * from one token to test something else. The limits' own tests (participant-limits, mint-limits)
 * set the limits they test.
 */
export const UNLIMITED = Object.fromEntries(
  Object.entries(configProperties())
    .filter(([, p]) => p['x-env'] in BENCH_LIMITS)
    .map(([key, p]) => [key, Number(BENCH_LIMITS[p['x-env']])]),
) as Partial<GatewayConfig>; // the bench's raised limits (bench/limits.ts), as configuration keys

export async function startTestGateway(o: TestGatewayOptions): Promise<TestGateway> {
  const prefix = o.sameDataAs?.config.redisPrefix ?? o.prefix ?? randomPrefix();
  const config = loadConfig({}, { port: 0, opsPort: 0, host: '127.0.0.1', redisUrl: o.redisUrl, redisPrefix: prefix, logLevel: 'silent', liveDrainMs: 500, signingKekFile: testKekFile(), ...UNLIMITED, ...o.overrides });
  const adminRedis = new Redis(o.redisUrl, { maxRetriesPerRequest: 1 });
  adminRedis.on('error', () => {}); // tests that kill Redis expect this client's errors
  const admin = createStores(adminRedis, prefix, loadKek(config.signingKekFile));
  const layout = o.layout ?? DEMO_LAYOUT;
  let seeded = o.sameDataAs;
  if (!seeded) {
    const team = await admin.teams.create('Test team');
    await admin.layouts.import(team.teamId, layout);
    const key = await admin.apiKeys.create(team.teamId, { name: 'test' });
    seeded = { teamId: team.teamId, apiKey: key.apiKey, keyId: key.keyId, layoutId: layout.layoutId, config };
  }
  const gw = await startGateway(config, { log: o.log ?? createLogger('test-gateway', 'silent'), ...(o.now && { now: o.now }) }).catch((e: unknown) => {
    adminRedis.disconnect(); // a gateway that does not start leaves no client behind
    throw e;
  });
  return {
    gw,
    url: `http://127.0.0.1:${gw.port}`,
    config,
    admin,
    teamId: seeded.teamId,
    apiKey: seeded.apiKey,
    keyId: seeded.keyId,
    layoutId: seeded.layoutId,
    async close() {
      await gw.close(1000);
      adminRedis.disconnect();
    },
  };
}

export interface JsonResponse {
  status: number;
  headers: Headers;
  body: any;
}

export async function call(url: string, init: RequestInit = {}): Promise<JsonResponse> {
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as unknown) : null };
}

export function getLayout(t: Pick<TestGateway, 'url'>, layoutId: string, apiKey: string | null): Promise<JsonResponse> {
  return call(`${t.url}/layout/${layoutId}`, { headers: apiKey === null ? {} : { 'x-api-key': apiKey } });
}

export function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<JsonResponse> {
  return call(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
}

export async function mintToken(t: Pick<TestGateway, 'url'>, layoutId: string, apiKey: string): Promise<string> {
  const r = await postJson(`${t.url}/token`, { layoutId }, { 'x-api-key': apiKey });
  if (r.status !== 200) throw new Error(`token: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.token as string;
}

export function postAction(t: Pick<TestGateway, 'url'>, token: string, body: unknown, headers: Record<string, string> = {}): Promise<JsonResponse> {
  return postJson(`${t.url}/action`, body, { authorization: `Bearer ${token}`, ...headers });
}

/** Overrides that put the cache re-check (CACHE_RECHECK_MS) out of a test's reach: only an invalidation message can change what a gateway has cached. */
export const NO_RECHECK = { cacheRecheckMs: 300_000 } as const;

/** Polls `check` until it returns true, or fails after `ms` (a bound for a loaded machine, not a latency claim). */
export async function eventually(check: () => boolean | Promise<boolean>, ms = LOADED_MACHINE_MS): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * A seeded gateway and one audience token for the enclosing suite: started before its tests,
 * closed after. Read `g.t` and `g.token` inside tests.
 */
export function useGatewayWithToken(redisUrl: () => string, options: Omit<TestGatewayOptions, 'redisUrl'> = {}): { t: TestGateway; token: string } {
  const g = {} as { t: TestGateway; token: string };
  beforeAll(async () => {
    g.t = await startTestGateway({ redisUrl: redisUrl(), ...options });
    g.token = await mintToken(g.t, g.t.layoutId, g.t.apiKey);
  });
  afterAll(() => g.t.close());
  return g;
}
