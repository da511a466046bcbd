// Two gateway processes on one Redis: a key revocation and a page switch reach both by their
// messages (milliseconds). The processes' cache re-check is out of the test's reach, so nothing else
// could bring them; the time it took is recorded as a figure, not raced.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../dev/redis-server.js';
import { recordFigure } from '../helpers/figures.js';
import { eventually, mintToken, NO_RECHECK, postAction, testKekFile, useGatewayWithToken } from '../helpers/gateway.js';
import { LOADED_MACHINE_MS } from '../helpers/loaded-machine.js';
import { useRedis } from '../helpers/redis.js';

const BIN = fileURLToPath(new URL('../../dist/gateway/main.js', import.meta.url));
const redis = useRedis();
const seeded = useGatewayWithToken(() => redis.get().server.url);
const children: ChildProcess[] = [];
afterAll(() => children.forEach((c) => c.kill('SIGKILL')));

async function gatewayProcess(): Promise<{ url: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, [BIN], { env: { PATH: process.env.PATH ?? '', SIGNING_KEK_FILE: testKekFile(), REDIS_URL: redis.get().server.url, REDIS_PREFIX: seeded.t.config.redisPrefix, PORT: String(port), OPS_PORT: '0', CACHE_RECHECK_MS: String(NO_RECHECK.cacheRecheckMs) } });
  children.push(child);
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  await eventually(() => out.includes('listening'), 10_000);
  return { url: `http://127.0.0.1:${port}` };
}

/** ms until `check` holds on every gateway, polling each every millisecond or so. */
async function reachBoth(gws: { url: string }[], check: (gw: { url: string }) => Promise<boolean>): Promise<number> {
  const started = performance.now();
  const times = await Promise.all(
    gws.map(async (gw) => {
      while (!(await check(gw))) {
        if (performance.now() - started > LOADED_MACHINE_MS) return Infinity;
      }
      return performance.now() - started;
    }),
  );
  return Math.max(...times);
}

describe('two gateway processes', () => {
  it('both follow a revocation and a page switch by their messages', async () => {
    const gws = [await gatewayProcess(), await gatewayProcess()];
    const key = await seeded.t.admin.apiKeys.create(seeded.t.teamId, { name: 'to revoke' });
    const tokens = await Promise.all(gws.map((gw) => mintToken(gw, seeded.t.layoutId, key.apiKey)));
    const button = { layoutId: seeded.t.layoutId, lid: 1, type: 'Button' };
    for (const [i, gw] of gws.entries()) expect((await postAction(gw, tokens[i]!, button)).status).toBe(200);

    const revoking = seeded.t.admin.apiKeys.revoke(key.keyId);
    const revocationMs = await reachBoth(gws, async (gw) => (await postAction(gw, tokens[gws.indexOf(gw)]!, button)).status === 401);
    await revoking;
    expect(revocationMs).toBeLessThan(Infinity);
    recordFigure('revocation_reaches_two_gateways_ms', revocationMs, 'ms', 'by the message; re-check out of reach');

    const encore = { layoutId: seeded.t.layoutId, lid: 7, type: 'Button' };
    const token = await mintToken(gws[0]!, seeded.t.layoutId, seeded.t.apiKey);
    expect((await postAction(gws[0]!, token, encore)).status).toBe(400); // not on the active page yet
    const switching = seeded.t.admin.layouts.activate(seeded.t.layoutId, 'encore');
    const switchMs = await reachBoth(gws, async (gw) => (await postAction(gw, token, encore)).status === 200);
    await switching;
    expect(switchMs).toBeLessThan(Infinity);
    recordFigure('page_switch_reaches_two_gateways_ms', switchMs, 'ms', 'by the message; re-check out of reach');
  });
});
