// The live channel across gateway processes, as production runs it: one gateway with
// GATEWAY_WORKERS=2 and one single-process gateway on the same Redis (standalone or Cluster),
// participants on sockets spread over all three processes. A page switch reaches every socket, a
// revoked key's sockets close with 4001 on every process, and every socket's crowd values equal
// the offline figure (each process holds a share of the crowd: the values are merged).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { LayoutDefinition } from '../../schemas/types.js';
import { stopProcess } from './bridge.js';
import { audiencectlJson } from './cli.js';
import { CROWD_LAYOUT, CROWD_MODES, CROWD_WINDOW_MS, crowdFrameMismatches, offlineCrowd, participantRounds, type CrowdAction, type CrowdFrame } from './crowd.js';
import { recordFigure } from './figures.js';
import { spawnGateway, type GatewayProcess } from './gateway-process.js';
import { eventually, postJson } from './gateway.js';
import { connectLive, type LiveClient } from './live.js';
import { seededRandom } from './seeded-random.js';

/** CROWD_LAYOUT with a second page to switch to. */
export const LIVE_LAYOUT: LayoutDefinition = {
  ...CROWD_LAYOUT,
  pages: [...CROWD_LAYOUT.pages, { pageId: 'encore', name: 'Encore', controls: [{ lid: 40, address: '/040', type: 'Button', props: { label: 'Again!' } }] }],
};

type Env = Record<string, string> & { REDIS_URL: string; REDIS_PREFIX: string };

export async function liveAcrossProcesses(env: Env, seed: number, label: string): Promise<void> {
  const ctl = (...args: string[]) => audiencectlJson(env, ...args);
  const teamId = (await ctl('team', 'create', '--name', 'Live')).teamId as string;
  const file = join(mkdtempSync(join(tmpdir(), 'ac-live-')), 'layout.json');
  writeFileSync(file, JSON.stringify(LIVE_LAYOUT));
  await ctl('layout', 'import', '--team', teamId, file);
  const layoutId = LIVE_LAYOUT.layoutId;
  const kept = (await ctl('key', 'create', '--team', teamId, '--name', 'kept')).apiKey as string;
  const revoked = await ctl('key', 'create', '--team', teamId, '--name', 'to revoke');
  const gateways: GatewayProcess[] = [];
  const sockets: LiveClient[] = [];
  try {
    gateways.push(await spawnGateway({ ...env, GATEWAY_WORKERS: '2' }), await spawnGateway(env));
    const mint = async (key: string) => (await postJson(`${gateways[0]!.url}/token`, { layoutId }, { 'x-api-key': key })).body.token as string;
    // participants over the three processes: the two workers share the first port (the kernel spreads them)
    const random = seededRandom(seed);
    const actions: CrowdAction[] = [];
    const participants = 24;
    for (let p = 0; p < participants; p++) sockets.push(await connectLive(gateways[p % 3 === 2 ? 1 : 0]!.url, await mint(kept)));
    const doomed = await Promise.all([0, 1, 0, 1].map(async (g) => connectLive(gateways[g]!.url, await mint(revoked.apiKey))));
    for (const s of [...sockets, ...doomed]) await s.next('page');
    await Promise.all(
      sockets.map(async (socket, p) => {
        for (const round of participantRounds(random, p)) {
          actions.push(...round);
          for (const [i, a] of round.entries()) {
            const before = socket.frames.length;
            socket.send({ op: 'action', ref: `${p}.${i}`, lid: a.lid, type: a.type, ...(a.value !== null && { value: a.value }) });
            expect(await socket.next('ack', before, 5000)).toEqual({ op: 'ack', ref: `${p}.${i}` });
          }
        }
      }),
    );
    // the crowd: every socket, on every process, sees the merged figure
    const expected = offlineCrowd(actions, CROWD_MODES, CROWD_WINDOW_MS, { 4: 3 });
    const crowdOf = (s: LiveClient) => s.frames.filter((f) => f.op === 'crowd') as unknown as CrowdFrame[];
    const all = [...sockets, ...doomed];
    const wrong = () => all.map((s, i) => crowdFrameMismatches(crowdOf(s), expected).map((m) => `socket ${i}: ${m}`)).flat();
    await eventually(() => wrong().length === 0).catch(() => {});
    if (wrong().length > 0) console.log(wrong().slice(0, 8).join("\n"));
    expect(wrong()).toEqual([]);
    // a page switch reaches every socket
    const before = all.map((s) => s.frames.length);
    const switched = Date.now();
    await ctl('layout', 'activate', layoutId, 'encore');
    await eventually(() => all.every((s, i) => s.frames.slice(before[i]).some((f) => f.op === 'page' && f.activePageId === 'encore')));
    recordFigure(`live_page_switch_all_sockets_ms_${label}`, Date.now() - switched, 'ms', `${all.length} sockets over 3 gateway processes, audiencectl layout activate to the last page frame`);
    // revoking a key closes its sockets on every process with 4001, and only those
    const revokedAt = Date.now();
    await ctl('key', 'revoke', revoked.keyId);
    const closes = await Promise.all(doomed.map(async (s) => ({ code: (await s.closed).code, ms: Date.now() - revokedAt })));
    expect(closes.map((c) => c.code)).toEqual([4001, 4001, 4001, 4001]);
    // audiencectl's own start and Redis round trip are in it: the gateway's part is smaller
    expect(Math.max(...closes.map((c) => c.ms))).toBeLessThan(2000);
    recordFigure(`live_key_revoked_sockets_closed_ms_${label}`, Math.max(...closes.map((c) => c.ms)), 'ms', 'audiencectl key revoke (process start included) to the last 4001 close');
    await new Promise((r) => setTimeout(r, 200));
    expect(sockets.every((s) => s.ws.readyState === s.ws.OPEN)).toBe(true);
  } finally {
    for (const s of sockets) s.ws.terminate();
    for (const g of gateways) await stopProcess(g.child, 'SIGTERM');
  }
}
