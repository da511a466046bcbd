// What the benches play against a gateway: the demo's team, layout and API key written straight to
// Redis, audience tokens minted through POST /token, and POST /action requests in the audience's
// mix of control types, built up front so a generator only sends.
import { readFileSync } from 'node:fs';
import { createRedisClient, type RedisTarget } from '../runtime/redis.js';
import type { BuiltRequest } from './harness.js';

/** A team, the demo layout (and `moreLayouts`) and an API key, written straight to Redis (a URL, or a cluster's seeds). */
export async function seedDemo(redis: string | RedisTarget, prefix = 'ac:', moreLayouts: readonly object[] = []): Promise<{ apiKey: string; layoutId: string }> {
  const { createStores } = await import('../gateway/store/stores.js');
  const { DEMO_LAYOUT_FILE } = await import('../schemas/demo-layout.js');
  const admin = createRedisClient(typeof redis === 'string' ? { url: redis } : redis, { name: 'bench-seed', commandTimeoutMs: 5000, reconnectStepMs: 100, maxReconnectDelayMs: 100 });
  await admin.connect();
  try {
    const stores = createStores(admin, prefix);
    const team = await stores.teams.create('bench');
    await stores.layouts.import(team.teamId, JSON.parse(readFileSync(DEMO_LAYOUT_FILE, 'utf8')));
    for (const layout of moreLayouts) await stores.layouts.import(team.teamId, layout);
    const key = await stores.apiKeys.create(team.teamId, { name: 'bench' });
    return { apiKey: key.apiKey, layoutId: 'demo-show' };
  } finally {
    admin.disconnect();
  }
}

/** `count` audience tokens from POST /token, `parallel` requests at a time. */
export async function mintTokens(url: string, apiKey: string, layoutId: string, count: number, parallel = 32): Promise<string[]> {
  const tokens: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < count) {
        next++;
        const r = await fetch(`${url}/token`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body: JSON.stringify({ layoutId }) });
        tokens.push(((await r.json()) as { token: string }).token);
      }
    }),
  );
  return tokens;
}

/** The audience's mix of control types: mostly continuous controls, some discrete. */
const MIX: { weight: number; body: (i: number) => object }[] = [
  { weight: 40, body: (i) => ({ lid: 2, type: 'Slider', value: (i % 101) / 100 }) },
  { weight: 25, body: (i) => ({ lid: 6, type: 'XYPad', value: [(i % 11) / 10, (i % 7) / 6] }) },
  { weight: 15, body: () => ({ lid: 1, type: 'Button' }) },
  { weight: 10, body: (i) => ({ lid: 3, type: 'Toggle', value: i % 2 === 0 }) },
  { weight: 7, body: (i) => ({ lid: 4, type: 'Index', value: i % 3 }) },
  { weight: 3, body: (i) => ({ lid: 5, type: 'String', value: `go team ${i % 50}` }) },
];
const WHEEL = MIX.flatMap((m) => Array<(i: number) => object>(m.weight).fill(m.body));

/** `count` POST /action requests rotating over the tokens and the mix, built up front (the generator then only sends). */
export function actionRequests(tokens: string[], layoutId: string, count = 10_000, body?: (i: number) => object): BuiltRequest[] {
  return Array.from({ length: count }, (_, i) => ({
    method: 'POST',
    path: '/action',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${tokens[i % tokens.length]}` },
    body: JSON.stringify({ layoutId, ...(body ?? WHEEL[i % WHEEL.length]!)(i) }),
  }));
}
