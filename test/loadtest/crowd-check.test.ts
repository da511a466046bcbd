// audience-loadtest --display: the rehearsal checks the crowd's count. Two real gateway processes
// behind one address (the fault proxy hands each new connection to the next: phones land on both,
// and HTTP phones' connections move between them), a real bridge sending to the tool's display
// port: every aggregated control's value and n as the tool expects them from what its phones last
// sent, beside what the display showed. A crowd the tool did not play (participants it does not
// know of) is a mismatch, and a threshold fails the run on it.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../dev/redis-server.js';
import type { LoadtestResult } from '../../loadtest/result.js';
import { configFile, spawnBridge } from '../helpers/bridge.js';
import { CROWD_LAYOUT } from '../helpers/crowd.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { postJson } from '../helpers/gateway.js';
import { postOnNewConnection, seedLayout, spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { killAfterEach } from '../helpers/processes.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';
import { createStores } from '../../gateway/store/stores.js';

const TOOL = fileURLToPath(new URL('../../dist/loadtest/main.js', import.meta.url));
const redis = useRedis();
const track = killAfterEach();
const dir = mkdtempSync(join(tmpdir(), 'crowd-check-'));
const LAYOUTS = ['check-played', 'check-extra'];
let apiKey: string;
let prefix: string;
let proxy: FaultProxy;
const gateways: GatewayProcess[] = [];

beforeAll(async () => {
  prefix = randomPrefix();
  const seeded = await seedLayout(redis.get().server.url, prefix, { ...CROWD_LAYOUT, layoutId: LAYOUTS[0]! });
  const team = (await seeded.admin.hget(`${prefix}layout:{${LAYOUTS[0]}}`, 'team'))!;
  await createStores(seeded.admin, prefix).layouts.import(team, { ...CROWD_LAYOUT, layoutId: LAYOUTS[1]! });
  seeded.admin.disconnect();
  apiKey = seeded.apiKey;
  const env = { REDIS_URL: redis.get().server.url, REDIS_PREFIX: prefix };
  gateways.push(await spawnGateway(env), await spawnGateway(env));
  proxy = new FaultProxy({ targets: () => gateways.map((g) => g.port) });
  await proxy.start();
}, 60_000);
afterAll(async () => {
  for (const g of gateways) g.child.kill('SIGKILL');
  await proxy?.stop();
});

/** Runs the tool on `layoutId` with --display on a bridge's target port; its exit code and result. */
async function rehearse(layoutId: string, before: () => Promise<void> = async () => {}): Promise<{ code: number | null; stdout: string; result: LoadtestResult }> {
  const port = await freePort();
  const bridge = await spawnBridge(['--config', configFile({ redisUrl: redis.get().server.url, prefix, bridgeId: `check-${layoutId}`, layouts: [{ layoutId, tickHz: 100, targets: [{ host: '127.0.0.1', port }] }] })]);
  track(bridge.child);
  await before();
  const scenario = {
    layoutId, seed: 9, maxLagMs: 60_000, httpShare: 0.5,
    phases: [{ name: 'doors', durationS: 1, arrivalsPerS: 30 }, { name: 'play', durationS: 3, actionsPerPhonePerS: 1 }],
    thresholds: { crowd_mismatch: 'count == 0' },
  };
  const file = join(dir, `${layoutId}.json`);
  writeFileSync(file, JSON.stringify(scenario));
  const out = join(dir, `${layoutId}-result.json`);
  const child = track(spawn(process.execPath, [TOOL, 'run', file, '--target', `http://127.0.0.1:${proxy.port}`, '--display', `127.0.0.1:${port}`, '--out', out], { env: { PATH: process.env.PATH ?? '', AUDIENCE_API_KEY: apiKey, CI: '1' } }));
  let stdout = '';
  child.stdout.on('data', (d) => (stdout += d));
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  return { code, stdout, result: JSON.parse(readFileSync(out, 'utf8')) as LoadtestResult };
}

describe('audience-loadtest --display: the count check', () => {
  it('sets each aggregated control beside what the display showed: every one matches over two gateway processes, and the run passes', async () => {
    const { code, stdout, result } = await rehearse(LAYOUTS[0]!);
    const rows = result.crowd;
    console.log(`figure: crowd check over ${rows.length} controls: ${rows.map((r) => `${r.address} ${r.mode} n ${r.expected.n}/${r.shown?.n ?? '-'}`).join(', ')}`);
    expect(code, stdout).toBe(0);
    expect(rows.map((r) => r.lid).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 6, 10, 11, 13]); // every aggregated control of the page
    expect(rows.filter((r) => !r.match)).toEqual([]);
    expect(rows.filter((r) => r.expected.n > 0).length).toBeGreaterThanOrEqual(5); // the crowd did play
    expect(result.counts.crowd_checked).toBe(rows.length);
    expect(result.counts.crowd_mismatch).toBe(0);
    expect(stdout).toContain('crowd check');
  }, 60_000);

  it('shows a crowd it did not play as a mismatch (5 votes it does not know of), and the threshold fails the run (exit 99)', async () => {
    const layoutId = LAYOUTS[1]!;
    const { code, stdout, result } = await rehearse(layoutId, async () => {
      for (let i = 0; i < 5; i++) {
        const token = (await postJson(`${gateways[0]!.url}/token`, { layoutId }, { 'x-api-key': apiKey })).body.token as string;
        expect(await postOnNewConnection(gateways[i % 2]!.port, token, { layoutId, lid: 4, type: 'Index', value: 2 })).toBe(200);
      }
    });
    expect(code).toBe(99);
    const vote = result.crowd.find((r) => r.lid === 4)!;
    expect(vote.match).toBe(false);
    expect(vote.shown!.n).toBe(vote.expected.n + 5);
    expect(result.counts.crowd_mismatch).toBeGreaterThanOrEqual(1);
    expect(result.thresholds.find((t) => t.metric === 'crowd_mismatch')!.ok).toBe(false);
    expect(stdout).toContain('MISMATCH');
  }, 60_000);
});
