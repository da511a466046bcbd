// Participants that move after a failover are still counted once. A process hears that a
// participant moved on its own sharded channel of the layout, in the layout's hash slot; when the
// master of that slot dies, its replica takes over and the process must hear its channel there.
// Real Redis Cluster (3 masters, 3 replicas, cluster-node-timeout 1 s), two gateway processes: ten
// participants vote through the first, the layout's master is killed, and once the cluster has
// taken over (and the subscription has had time to be checked) the ten vote again through the
// second. The master is stopped (SIGSTOP), not killed: a lost host closes nothing, so a
// subscription on it goes deaf instead of failing. The crowd, merged from the summaries the two processes stored, counts ten.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { PROBE_EVERY_MS, PROBE_TIMEOUT_MS } from '../../gateway/live/crowd-feed.js';
import { decodeStreamEntry } from '../../schemas/action-entry.js';
import { CrowdTable } from '../../schemas/crowd-merge.js';
import { actionStreamKey } from '../../schemas/redis-keys.js';
import { audiencectlJson } from '../helpers/cli.js';
import { eventually, postJson } from '../helpers/gateway.js';
import { postOnNewConnection, spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { useRedisCluster } from '../helpers/redis-cluster.js';

const cluster = useRedisCluster({ nodeTimeoutMs: 1000 });
const gateways: GatewayProcess[] = [];
let reader: Cluster | undefined;
afterAll(() => {
  for (const g of gateways) g.child.kill('SIGKILL');
  reader?.disconnect();
});

const LAYOUT = 'moves-failover';
const VOTE = { lid: 4, address: '/004', type: 'Index' as const, props: { label: 'Colour' }, options: [{ index: 0, label: 'Red' }, { index: 1, label: 'Green' }], aggregate: { mode: 'votes' as const, windowMs: 600_000 } };

/** The crowd as a bridge merges it now: the newest summary of each process, within its lease. */
async function crowdNow(redis: Cluster, prefix: string): Promise<{ n: number; votes: number[] }> {
  const table = new CrowdTable();
  for (const [, fields] of await redis.xrange(actionStreamKey(prefix, LAYOUT), '-', '+')) {
    const d = decodeStreamEntry(fields);
    if (d.ok && 'summary' in d) table.offer(d.summary);
  }
  const v = table.changed(Date.now()).find((c) => c.lid === VOTE.lid);
  return { n: v?.n ?? 0, votes: v?.value ?? [] };
}

describe('participants that move after a failover of the layout’s master', () => {
  it('are counted once: the process they left hears of the move on the new master', async () => {
    const prefix = 'mf:';
    const env = { REDIS_URL: 'redis://127.0.0.1:1', REDIS_PREFIX: prefix, REDIS_CLUSTER_NODES: cluster.get().seeds };
    const ctl = (...args: string[]) => audiencectlJson(env, ...args);
    const teamId = (await ctl('team', 'create', '--name', 'MF')).teamId as string;
    const file = join(mkdtempSync(join(tmpdir(), 'ac-mf-')), 'layout.json');
    writeFileSync(file, JSON.stringify({ layoutId: LAYOUT, name: 'Moves', activePageId: 'main', pages: [{ pageId: 'main', name: 'Main', controls: [VOTE] }] }));
    await ctl('layout', 'import', '--team', teamId, file);
    const apiKey = (await ctl('key', 'create', '--team', teamId)).apiKey as string;
    gateways.push(await spawnGateway(env), await spawnGateway(env));
    const [first, second] = gateways as [GatewayProcess, GatewayProcess];
    reader = new Cluster(cluster.get().seeds.split(',').map((s) => ({ host: '127.0.0.1', port: Number(s.split(':')[1]) })), { redisOptions: { commandTimeout: 2000 }, slotsRefreshInterval: 1000 });
    reader.on('error', () => {});
    const tokens: string[] = [];
    for (let i = 0; i < 10; i++) tokens.push((await postJson(`${first.url}/token`, { layoutId: LAYOUT }, { 'x-api-key': apiKey })).body.token as string);
    for (const t of tokens) expect(await postOnNewConnection(first.port, t, { layoutId: LAYOUT, lid: 4, type: 'Index', value: 0 })).toBe(200);
    await eventually(async () => (await crowdNow(reader!, prefix)).n === 10, 5000);

    // the master goes silent, as a lost host does: no FIN, no RST, its connections open and dead
    const master = await cluster.get().masterOf(actionStreamKey(prefix, LAYOUT));
    cluster.get().nodes.find((n) => n.port === master)!.child.kill('SIGSTOP');
    // the slot is served again (both processes store), and a subscription check has had its time
    await eventually(async () => (await postOnNewConnection(first.port, tokens[0]!, { layoutId: LAYOUT, lid: 4, type: 'Index', value: 0 })) === 200, 30_000);
    await eventually(async () => (await postOnNewConnection(second.port, tokens[9]!, { layoutId: LAYOUT, lid: 4, type: 'Index', value: 1 })) === 200, 30_000);
    await new Promise((r) => setTimeout(r, PROBE_EVERY_MS + PROBE_TIMEOUT_MS + 1000));

    console.log(`failover over, subscriptions checked: ${new Date().toISOString()}`);
    for (const t of tokens) expect(await postOnNewConnection(second.port, t, { layoutId: LAYOUT, lid: 4, type: 'Index', value: 1 })).toBe(200);
    // one fold tick and 250 ms after the last vote, and a lease's worth for the stream to settle
    await new Promise((r) => setTimeout(r, 1500));
    let crowd: unknown = null;
    await eventually(async () => (crowd = await crowdNow(reader!, prefix).catch(() => null)) !== null, 10_000); // the reader may still hold the stopped master
    expect(crowd).toEqual({ n: 10, votes: [0, 10] });
    await cluster.get().kill(master);
  }, 90_000);
});
