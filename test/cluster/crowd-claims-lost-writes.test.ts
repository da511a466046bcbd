// A failover can lose the last claims: Redis replicates asynchronously, so a move made on the
// master just before it died may never reach the replica that takes over. The participants'
// owner keys then name the process they left, and the claim counter is behind. When they move
// again, the process that counts them must still hear of it: the processes check their claims
// against the new master and make again the ones it lost, and claim numbers keep their order
// across the failover. Real Redis Cluster (3 masters, 3 replicas, cluster-node-timeout 1 s), two
// gateway processes. The replica is cut off from its master (the master asks for a password the
// replica does not have, and the replica's link is killed) while ten participants move from the
// first process to the second; the master is killed, the replica takes over without those moves,
// and the ten move back to the first: the crowd counts ten, not twenty.
import { execFileSync } from 'node:child_process';
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

const LAYOUT = 'lost-claims';
const VOTE = { lid: 4, address: '/004', type: 'Index' as const, props: { label: 'Colour' }, options: [{ index: 0, label: 'Red' }, { index: 1, label: 'Green' }], aggregate: { mode: 'votes' as const, windowMs: 600_000 } };
const cli = (port: number, ...args: string[]) => execFileSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8', timeout: 5000 }).trim();

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

describe('claims a failover lost', () => {
  it('are made again on the new master, so participants that move again are counted once', async () => {
    const prefix = 'lc:';
    const env = { REDIS_URL: 'redis://127.0.0.1:1', REDIS_PREFIX: prefix, REDIS_CLUSTER_NODES: cluster.get().seeds };
    const ctl = (...args: string[]) => audiencectlJson(env, ...args);
    const teamId = (await ctl('team', 'create', '--name', 'LC')).teamId as string;
    const file = join(mkdtempSync(join(tmpdir(), 'ac-lc-')), 'layout.json');
    writeFileSync(file, JSON.stringify({ layoutId: LAYOUT, name: 'Lost claims', activePageId: 'main', pages: [{ pageId: 'main', name: 'Main', controls: [VOTE] }] }));
    await ctl('layout', 'import', '--team', teamId, file);
    const apiKey = (await ctl('key', 'create', '--team', teamId)).apiKey as string;
    gateways.push(await spawnGateway(env), await spawnGateway(env));
    const [first, second] = gateways as [GatewayProcess, GatewayProcess];
    reader = new Cluster(cluster.get().seeds.split(',').map((s) => ({ host: '127.0.0.1', port: Number(s.split(':')[1]) })), { redisOptions: { commandTimeout: 2000 }, slotsRefreshInterval: 1000 });
    reader.on('error', () => {});
    const tokens: string[] = [];
    for (let i = 0; i < 10; i++) tokens.push((await postJson(`${first.url}/token`, { layoutId: LAYOUT }, { 'x-api-key': apiKey })).body.token as string);
    const voteAll = async (g: GatewayProcess, value: number) => {
      for (const t of tokens) expect(await postOnNewConnection(g.port, t, { layoutId: LAYOUT, lid: 4, type: 'Index', value })).toBe(200);
    };
    await voteAll(first, 0);
    await eventually(async () => (await crowdNow(reader!, prefix)).n === 10, 5000);

    // the replica of the layout's master is cut off: what the master takes from now on is not replicated
    const master = await cluster.get().masterOf(actionStreamKey(prefix, LAYOUT));
    const replica = Number(/slave0:ip=[^,]+,port=(\d+)/.exec(cli(master, 'INFO', 'replication'))![1]);
    cli(master, 'ACL', 'SETUSER', 'default', '>replica-has-no-password');
    cli(replica, 'CLIENT', 'KILL', 'TYPE', 'master');
    await eventually(() => cli(replica, 'INFO', 'replication').includes('master_link_status:down'), 5000);

    // the ten move to the second process: claimed there on the master alone
    await voteAll(second, 1);
    await eventually(async () => JSON.stringify(await crowdNow(reader!, prefix)) === JSON.stringify({ n: 10, votes: [0, 10] }), 5000);

    // the master dies; its replica takes over without those moves
    await cluster.get().kill(master);
    await eventually(() => cli(replica, 'ROLE').startsWith('master'), 30_000);
    await eventually(async () => (await postOnNewConnection(second.port, tokens[9]!, { layoutId: LAYOUT, lid: 4, type: 'Index', value: 1 })) === 200, 30_000);
    await new Promise((r) => setTimeout(r, PROBE_EVERY_MS + PROBE_TIMEOUT_MS + 1000));

    // the ten move back to the first process: the second must hear of it and let them go
    await voteAll(first, 0);
    await new Promise((r) => setTimeout(r, 1500)); // a fold tick and 250 ms, and the stream settled
    let crowd: unknown = null;
    await eventually(async () => (crowd = await crowdNow(reader!, prefix).catch(() => null)) !== null, 10_000);
    expect(crowd).toEqual({ n: 10, votes: [10, 0] });
  }, 120_000);
});
