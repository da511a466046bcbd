// One show across hosts, through four faults. Every host is a network namespace with its own
// address: a Redis Cluster of three masters with a replica each (six hosts), three gateway hosts
// with GATEWAY_WORKERS=2 (the third joins mid-show), a load-balancer host running nginx with the
// shipped file over TLS, a venue host whose bridge reaches the cluster through the fault proxy at
// 40 ms each way (liblo's oscdump as its display), and a crowd host running audience-loadtest with
// 1,500 phones (sockets and HTTP) that vote, move a Slider, send Strings and renew their tokens,
// with --display watching what the bridge sends. In turn: a gateway host is lost (SIGKILL of every
// process on it, its address gone), a gateway host is added (nginx reloaded with it), the Redis
// master holding the layout is lost (its replica takes over), and the venue's link is cut for 10 s.
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LoadtestResult } from '../../loadtest/result.js';
import type { CrowdSample } from '../../loadtest/crowd-check.js';
import { decodeActionEntry } from '../../schemas/action-entry.js';
import { actionStreamKey } from '../../schemas/redis-keys.js';
import type { LayoutDefinition } from '../../schemas/types.js';
import { BRIDGE_COMMAND } from '../helpers/bridge.js';
import { audiencectlJson } from '../helpers/cli.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { recordFigure } from '../helpers/figures.js';
import { eventually, testKekFile } from '../helpers/gateway.js';
import { GATEWAY_BIN, UNLIMITED_ENV } from '../helpers/gateway-process.js';
import { answersTls, Hosts, printed, type Host } from '../helpers/hosts.js';
import { startOscdump, type Oscdump } from '../helpers/oscdump.js';
import { randomPrefix } from '../helpers/redis.js';

const TOOL = fileURLToPath(new URL('../../dist/loadtest/main.js', import.meta.url));
const NGINX = fileURLToPath(new URL('../../deploy/nginx/audience-control.conf', import.meta.url));
const LAYOUT_ID = 'show-across-hosts';
/** Ten minutes, the longest window: a participant's vote counts all show long, so `n` only grows and is exact at both ends of the count check's range. */
const WINDOW_MS = 600_000;
/** The crowd: with 5,000 phones and every other host on this 2-core machine the generator fell 2.6 s behind its schedule (p50), so its figures measured itself. */
const PHONES = 1500;
const LAYOUT: LayoutDefinition = {
  layoutId: LAYOUT_ID,
  name: 'Across hosts',
  activePageId: 'main',
  pages: [
    {
      pageId: 'main',
      name: 'Main',
      controls: [
        { lid: 8, address: '/008', type: 'Slider', props: { label: 'Volume' } },
        { lid: 4, address: '/004', type: 'Index', props: { label: 'Colour' }, options: [{ index: 0, label: 'Red' }, { index: 1, label: 'Green' }, { index: 2, label: 'Blue' }], aggregate: { mode: 'votes', windowMs: WINDOW_MS, cue: { quorum: PHONES / 5, share: 0.3, holdMs: 1000 } } },
        { lid: 5, address: '/005', type: 'String', props: { label: 'Shout-out' } },
      ],
    },
  ],
};
/** The crowd's doors are open this long; then the faults, from the crowd's start: */
const DOORS_MS = 20_000;
const LOSS_AT_MS = 28_000;
const ADD_AT_MS = 38_000;
const FAILOVER_AT_MS = 50_000;
const CUT_AT_MS = 62_000;
const CUT_MS = 10_000;
/**
 * The lost host's processes count until their leases run out (3 s after their last summary), then
 * a bridge tick and the display's own lag, which under a loaded CI run reached about 1 s: `n` may
 * be high this long after the loss (a CI run saw it high until 3.9 s after); and after the venue's
 * link is back.
 */
const EXACT_AGAIN_MS = 5000;
/** After the master's loss: the replica's election (a 1 s node timeout) and the leases of the summaries that could not be written meanwhile. */
const FAILOVER_SETTLE_MS = 8000;

const hosts = new Hosts();
const dir = mkdtempSync(join(tmpdir(), 'ac-show-'));
const prefix = randomPrefix();
const proxies: FaultProxy[] = [];
let nodes: Host[];
let gateways: Host[];
let lb: Host;
let crowd: Host;
let venue: Host;
let apiKey: string;
let cluster: Cluster;
let display: Oscdump;

const redisCli = (host: Host, ...args: string[]) =>
  new Promise<string>((resolve, reject) => execFile('redis-cli', ['-h', host.ip, '-p', '6379', ...args], { timeout: 5000 }, (e, out) => (e ? reject(new Error(`redis-cli ${args.join(' ')}: ${e.message}`)) : resolve(out))));

/** Commands every node of the cluster has processed. */
async function commandsProcessed(): Promise<number> {
  const infos = await Promise.all(nodes.map((n) => redisCli(n, 'INFO', 'stats').catch(() => '')));
  return infos.reduce((sum, i) => sum + Number(/total_commands_processed:(\d+)/.exec(i)?.[1] ?? 0), 0);
}

/** The host of the master that serves `key` now. */
async function masterOf(key: string): Promise<Host> {
  const slot = Number((await redisCli(nodes[0]!, 'CLUSTER', 'KEYSLOT', key)).trim());
  const slots = JSON.parse(await redisCli(nodes[0]!, '--json', 'CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
  const ip = slots.find(([from, to]) => slot >= from && slot <= to)![2][0];
  return nodes.find((n) => n.ip === ip)!;
}

function gatewayOn(host: Host, seeds: string): Promise<void> {
  const child = hosts.run(host, process.execPath, [GATEWAY_BIN], {
    env: { PATH: process.env.PATH ?? '', SIGNING_KEK_FILE: testKekFile(), ...UNLIMITED_ENV, REDIS_URL: 'redis://127.0.0.1:1', REDIS_CLUSTER_NODES: seeds, REDIS_PREFIX: prefix, HOST: '0.0.0.0', PORT: '8080', OPS_PORT: '0', TRUST_PROXY: lb.ip, GATEWAY_WORKERS: '2', LOG_LEVEL: 'info',
      // the whole show stays in the stream, so the test can read every String it stored
      STREAM_MAXLEN: '10000000' },
  });
  return printed(child, /audience-gateway workers listening/, 30_000, `the gateway on ${host.name}`);
}

/** The shipped nginx file, with only the certificate, the listen address and the gateways changed. */
function writeSite(upstreams: readonly Host[]): void {
  const servers = upstreams.map((g) => `    server ${g.ip}:8080 max_fails=1 fail_timeout=10s;`).join('\n');
  const site = readFileSync(NGINX, 'utf8')
    .replace(/( {4}server 127\.0\.0\.1:\d+ [^\n]*\n)+/, `${servers}\n`)
    .replace('/etc/ssl/audience/fullchain.pem', join(dir, 'cert.pem'))
    .replace('/etc/ssl/audience/privkey.pem', join(dir, 'key.pem'))
    .replace('listen 443 ssl;', `listen ${lb.ip}:443 ssl;`)
    .replace('listen [::]:443 ssl;', '');
  if (!site.includes(servers)) throw new Error('the shipped nginx file has no upstream servers to replace');
  writeFileSync(join(dir, 'site.conf'), site);
}

beforeAll(async () => {
  try {
    hosts.start();
    nodes = [1, 2, 3, 4, 5, 6].map((i) => hosts.add(`redis${i}`, 10 + i));
    gateways = [1, 2, 3].map((i) => hosts.add(`gw${i}`, 20 + i));
    lb = hosts.add('lb', 30);
    crowd = hosts.add('crowd', 40);
    venue = hosts.add('venue', 50);
    // each node also listens on a second address: the venue's fault proxy reaches it there
    const second = new Map(nodes.map((n, i) => [n, hosts.alias(n, 111 + i)]));
    await Promise.all(
      nodes.map((n) => {
        const data = join(dir, n.name);
        mkdirSync(data);
        const child = hosts.run(n, 'redis-server', ['--bind', n.ip, second.get(n)!, '--cluster-announce-ip', n.ip, '--port', '6379', '--protected-mode', 'no', '--cluster-enabled', 'yes', '--cluster-config-file', join(data, 'nodes.conf'), '--cluster-node-timeout', '1000', '--appendonly', 'yes', '--save', '', '--dir', data]);
        return printed(child, /Ready to accept connections/, 10_000, `redis-server on ${n.name}`);
      }),
    );
    execFileSync('redis-cli', ['--cluster', 'create', ...nodes.map((n) => `${n.ip}:6379`), '--cluster-replicas', '1', '--cluster-yes'], { stdio: 'ignore', timeout: 30_000 });
    await eventually(async () => (await Promise.all(nodes.map((n) => redisCli(n, 'CLUSTER', 'INFO')))).every((i) => i.includes('cluster_state:ok') && i.includes('cluster_known_nodes:6')), 20_000);
    await eventually(async () => (await Promise.all(nodes.map((n) => redisCli(n, 'INFO', 'replication')))).filter((i) => i.includes('master_link_status:up')).length === 3, 30_000);
    const seeds = nodes.map((n) => `${n.ip}:6379`).join(',');
    const ctl = (...args: string[]) => audiencectlJson({ REDIS_URL: 'redis://127.0.0.1:1', REDIS_CLUSTER_NODES: seeds, REDIS_PREFIX: prefix, SIGNING_KEK_FILE: testKekFile() }, ...args);
    const teamId = (await ctl('team', 'create', '--name', 'Across hosts')).teamId as string;
    writeFileSync(join(dir, 'layout.json'), JSON.stringify(LAYOUT));
    await ctl('layout', 'import', '--team', teamId, join(dir, 'layout.json'));
    apiKey = (await ctl('key', 'create', '--team', teamId)).apiKey as string;
    // the third host's gateway starts now and joins the balancer at ADD_AT_MS, as a new pod does once
    // ready: started under the show on two shared cores, it took up to 7 s to listen
    await Promise.all(gateways.map((g) => gatewayOn(g, seeds)));

    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '2', '-subj', '/CN=audience.test', '-addext', `subjectAltName=IP:${lb.ip}`], { stdio: 'ignore' });
    writeSite(gateways.slice(0, 2));
    const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `${t}_temp_path ${join(dir, t)};`).join(' ');
    // a master process, so that adding a host is a reload (SIGHUP) as an SRE does it
    writeFileSync(join(dir, 'nginx.conf'), `user root; worker_rlimit_nofile 20000; error_log ${join(dir, 'error.log')}; pid ${join(dir, 'nginx.pid')};\nevents { worker_connections 16384; }\nhttp { access_log off; ${temp} include ${join(dir, 'site.conf')}; }\n`);
    hosts.run(lb, 'nginx', ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;']);
    await eventually(() => Promise.resolve(answersTls(lb.ip)), 10_000);

    // the venue reaches each node's address through the test's namespace, where the fault proxy
    // listens on it (40 ms each way) and passes to the node's second address: the bridge connects
    // to the cluster's own addresses, and the cluster's redirections and failovers name them
    for (const n of nodes) {
      hosts.intercept(venue, n);
      const proxy = new FaultProxy({ host: n.ip, port: 6379, targetHost: second.get(n)!, targets: () => [6379], up: { latencyMs: 40 }, down: { latencyMs: 40 } });
      await proxy.start();
      proxies.push(proxy);
    }
    // (the test's own reads go the venue's way too)
    cluster = new Cluster(nodes.map((n) => ({ host: n.ip, port: 6379 })), { slotsRefreshInterval: 1000 });
    cluster.on('error', () => {});
    display = await startOscdump({ via: ['ip', 'netns', 'exec', venue.ns], port: 9000 });
    writeFileSync(
      join(dir, 'bridge.json'),
      JSON.stringify({
        bridgeId: 'venue',
        redisClusterNodes: nodes.map((n) => `${n.ip}:6379`),
        redisPrefix: prefix,
        layouts: [{ layoutId: LAYOUT_ID, maxAgeMs: 120_000, targets: [{ host: venue.ip, port: display.port }, { host: crowd.ip, port: 9001 }] }],
      }),
    );
    const bridge = hosts.run(venue, BRIDGE_COMMAND[0]!, [...BRIDGE_COMMAND.slice(1), '--config', join(dir, 'bridge.json')], { env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'info' } });
    await printed(bridge, /audience-bridge running/, 20_000, 'the bridge');
  } catch (e) {
    for (const p of proxies) await p.stop();
    hosts.remove();
    throw e;
  }
}, 180_000);
afterAll(async () => {
  cluster?.disconnect();
  for (const p of proxies) await p.stop();
  hosts.remove();
});

const wait = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
const over = (s: CrowdSample) => s.shown! > s.expected[1];
const outside = (s: CrowdSample) => s.shown! < s.expected[0] || over(s);

describe('a show across hosts (Redis Cluster on six hosts, three gateway hosts, nginx, a venue behind 40 ms, 1,500 phones)', () => {
  it('through a lost host, an added host, a master failover and a 10 s venue cut: phones come back, nobody is counted twice up to the failover, every acked String plays once in order, the cue fires once', async () => {
    const scenario = {
      layoutId: LAYOUT_ID, seed: 70, maxLagMs: 60_000, mintPerSecond: 1000, httpShare: 0.2, renewEveryS: 20,
      phases: [{ name: 'doors', durationS: DOORS_MS / 1000, arrivalsPerS: (1.05 * PHONES * 1000) / DOORS_MS }, { name: 'play', durationS: 64, actionsPerPhonePerS: 0.15 }, { name: 'quiet', durationS: 4 }],
      thresholds: { display_lost: 'count == 0' },
    };
    writeFileSync(join(dir, 'show.json'), JSON.stringify(scenario));
    const out = join(dir, 'result.json');
    const tool = hosts.run(crowd, process.execPath, [TOOL, 'run', join(dir, 'show.json'), '--target', `https://${lb.ip}`, '--display', `${crowd.ip}:9001`, '--out', out], {
      env: { PATH: process.env.PATH ?? '', AUDIENCE_API_KEY: apiKey, CI: '1', NODE_EXTRA_CA_CERTS: join(dir, 'cert.pem') },
    });
    const start = Date.now();
    let output = '';
    tool.stdout!.on('data', (d) => (output += d));
    tool.stderr!.on('data', (d) => (output += d));
    const exited = new Promise<number | null>((r) => tool.once('exit', (code) => r(code)));

    await wait(start + DOORS_MS - Date.now());
    const commandsFrom = { at: Date.now(), n: await commandsProcessed() };
    await wait(start + LOSS_AT_MS - Date.now());
    const lossAt = Date.now();
    hosts.lose(gateways[0]!);
    await wait(start + ADD_AT_MS - Date.now());
    writeSite(gateways);
    process.kill(Number(readFileSync(join(dir, 'nginx.pid'), 'utf8').trim()), 'SIGHUP');
    const addAt = Date.now();
    await wait(start + FAILOVER_AT_MS - 2000 - Date.now());
    const commandsTo = { at: Date.now(), n: await commandsProcessed() };
    const master = await masterOf(actionStreamKey(prefix, LAYOUT_ID));
    await wait(start + FAILOVER_AT_MS - Date.now());
    const failAt = Date.now();
    hosts.lose(master);
    await wait(start + CUT_AT_MS - Date.now());
    const cutAt = Date.now();
    for (const p of proxies) p.cut();
    await wait(CUT_MS);
    for (const p of proxies) p.restore();
    const restoreAt = Date.now();
    const code = await exited;
    const r = JSON.parse(readFileSync(out, 'utf8')) as LoadtestResult;

    // the figures
    const outage = r.metrics.outage_ms;
    const votes = r.crowdSamples.filter((s) => s.lid === 4 && s.shown !== null);
    const offIn = (samples: CrowdSample[], from: number, to: number, off = outside) => samples.filter((s) => s.at >= from && s.at < to && off(s)).length;
    const exactWindows: [number, number][] = [[0, lossAt], [lossAt + EXACT_AGAIN_MS, failAt], [failAt + FAILOVER_SETTLE_MS, cutAt], [restoreAt + EXACT_AGAIN_MS, Infinity]];
    const offExact = (samples: CrowdSample[], off = outside) => exactWindows.reduce((sum, [from, to]) => sum + offIn(samples, from, to, off), 0);
    const overOutside = (samples: CrowdSample[]) => offExact(samples, over);
    /** before the master's loss: a failover can lose the claims of its last moment (asynchronous replication), and a later move then leaves a participant counted twice */
    const overBeforeFailover = (samples: CrowdSample[]) => offIn(samples, 0, lossAt, over) + offIn(samples, lossAt + EXACT_AGAIN_MS, failAt, over);
    const commandsPerS = ((commandsTo.n - commandsFrom.n) * 1000) / (commandsTo.at - commandsFrom.at);
    /** how long after the lost host each of its sockets was live again */
    const backFromLoss = r.socketsBackAt.filter((t) => t > lossAt && t < addAt).map((t) => t - lossAt);
    const rank = (q: number) => backFromLoss[Math.min(backFromLoss.length - 1, Math.ceil(q * backFromLoss.length) - 1)] ?? NaN;
    const under = (s: CrowdSample) => s.shown! < s.expected[0];
    const cues = display.lines.filter((l) => l.address === '/004/cue');
    recordFigure('show_hosts_reconnect_p50_ms', outage?.p50 ?? NaN, 'ms', `${r.counts.phones} phones across three gateway hosts, one lost: from a lost socket's last frame to its new page`);
    recordFigure('show_hosts_reconnect_p99_ms', outage?.p99 ?? NaN, 'ms', 'the same, p99');
    recordFigure('show_hosts_back_from_loss_p50_ms', rank(0.5), 'ms', `${backFromLoss.length} sockets of the lost host: from the loss to the new socket's page`);
    recordFigure('show_hosts_back_from_loss_p99_ms', rank(0.99), 'ms', 'the same, p99');
    recordFigure('show_hosts_vote_samples_under_after_loss', offIn(votes, lossAt + EXACT_AGAIN_MS, addAt, under), 'samples', "of the vote's n, below the least its acked votes gave, from 5 s after the lost host to the added one (its HTTP phones count again when they next vote)");
    recordFigure('show_hosts_restates', r.counts.restates, 'frames', 'restatements of socket phones reconnected');
    recordFigure('show_hosts_vote_samples_over', overBeforeFailover(votes), 'samples', `of ${votes.length} samples of the vote's n (every 250 ms), above the most its acked votes gave, before the failover and outside the lost host's allowance (bound: 0)`);
    recordFigure('show_hosts_vote_samples_over_after_failover', overOutside(votes) - overBeforeFailover(votes), 'samples', 'the same, after the failover settled');
    recordFigure('show_hosts_vote_samples_off', offExact(votes), 'samples', `of ${votes.length} samples of the vote's n, above or below the range its acked votes gave, outside a fault's allowance`);
    recordFigure('show_hosts_vote_samples_off_after_loss', offIn(votes, lossAt, lossAt + EXACT_AGAIN_MS), 'samples', 'the same, within 5 s of the lost host');
    const overAfterLoss = votes.filter((v) => v.at >= lossAt && v.at < addAt && over(v)).map((v) => v.at - lossAt);
    recordFigure('show_hosts_vote_over_after_loss_until_ms', overAfterLoss.at(-1) ?? 0, 'ms', "the last sample of the vote's n above the most its acked votes gave, after the lost host (its leases, a bridge tick, the display's lag)");
    recordFigure('show_hosts_vote_samples_off_failover', offIn(votes, failAt, failAt + FAILOVER_SETTLE_MS), 'samples', 'the same, within 8 s of the master failover');
    recordFigure('show_hosts_redis_commands_per_s', Math.round(commandsPerS), 'commands/s', 'the cluster, all six nodes, from the end of the doors to 2 s before the failover');
    recordFigure('show_hosts_acked_strings', r.counts.display_seen, 'actions', `Strings acked and shown; lost: ${r.counts.display_lost}`);

    const moments = { lossAt, addAt, failAt, cutAt, restoreAt };
    console.log(`show across hosts: faults at ${Object.entries(moments).map(([k, t]) => `${k} ${((t - start) / 1000).toFixed(1)} s`).join(', ')}; the vote's n off at ${votes.filter(outside).map((v) => `${((v.at - start) / 1000).toFixed(1)} s ${v.shown} [${v.expected.join('-')}]`).join(', ') || 'no sample'}`);
    expect(r.counts.phones).toBeGreaterThanOrEqual(PHONES);
    expect(r.counts.renewals, JSON.stringify(r.errors)).toBeGreaterThanOrEqual(PHONES * 2);

    // a gateway host lost: about a third of the socket phones were on it, and they came back
    expect(outage?.count ?? 0, JSON.stringify(r.counts)).toBeGreaterThan(PHONES / 5);

    // counted once: up to the failover, outside the lost host's allowance, the display never shows
    // more participants than voted (a participant counted twice, a moved one still counted where it was)
    expect(votes.length).toBeGreaterThan(200);
    const when = (t: number) => `${((t - start) / 1000).toFixed(1)} s`;
    const faults = Object.entries(moments).map(([k, t]) => `${k} ${when(t)}`).join(', ');
    expect(votes.filter((s) => s.at > addAt && s.at < failAt).length, faults).toBeGreaterThan(20);
    expect(overOutside(votes), `${faults}; over at ${votes.filter(over).map((v) => `${when(v.at)} ${v.shown} [${v.expected.join('-')}]`).join(', ')}`).toBe(0);
    // the lost host's socket phones restated their votes on the hosts they reached: 143 to 236 in
    // 21 runs (median 190), as the balancer's spread and the votes acked by the loss vary; the bound
    // asks for restatements at scale, and test/faults/crowd-restate.test.ts checks that every lost
    // participant counts again without a new action
    expect(r.counts.restates).toBeGreaterThan(PHONES / 20);
    expect(votes.at(-1)!.shown).toBeGreaterThan(PHONES / 2);

    // every stored String played once, in the stream's order, through the failover and the cut;
    // every acked one was stored and played (display_lost 0)
    const raw = await cluster.xrange(actionStreamKey(prefix, LAYOUT_ID), '-', '+');
    const entries = raw.map(([, f]) => decodeActionEntry(f));
    // each stored String by its phone's number for it, with what names its entry (stream id, action id, receive time)
    const strings = raw.flatMap(([streamId], i) => {
      const d = entries[i]!;
      return d.ok && d.entry.lid === 5 ? [{ value: /#(p\d+\.\d+)$/.exec(String(d.entry.value))![1]!, text: `${String(d.entry.value)} ${streamId} ${d.entry.id} at ${when(d.entry.ts)}` }] : [];
    });
    const stored = strings.map((e) => e.value);
    const played = display.lines.filter((l) => l.address === '/005').map((l) => /#(p\d+\.\d+)/.exec(l.raw)?.[1]);
    // a String stored twice, named against the faults' moments
    const times = new Map<string, number>();
    for (const e of strings) times.set(e.value, (times.get(e.value) ?? 0) + 1);
    const twice = strings.filter((e) => times.get(e.value)! > 1).map((e) => e.text);
    expect(new Set(stored).size, `${faults}; stored twice: ${twice.join(', ')}`).toBe(stored.length);
    expect(stored.length).toBeGreaterThanOrEqual(r.counts.display_seen);
    expect(played.length, 'Strings played').toBe(stored.length);
    expect(played).toEqual(stored);
    expect(r.counts.display_lost).toBe(0);
    expect(played.length).toBeGreaterThan(1000);
    expect(code, output.slice(-4000)).toBe(0); // its threshold: no acked String lost

    // the vote cue fired once, before the faults, and never again
    expect(cues.length, JSON.stringify(cues.map((c) => c.raw))).toBe(1);
    expect(cues[0]!.at).toBeLessThan(lossAt);
  }, 300_000);
});
