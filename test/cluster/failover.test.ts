// kill -9 of the master that holds a layout, under load, on a real Redis Cluster (3 masters, 3
// replicas, cluster-node-timeout 1 s): /action answers 503 while the slot has no master and 200
// again once its replica took over, with no restart of gateway or bridge. The load runs until the
// answers have been 200 for STEADY_MS after the last 503, so the test measures how long the
// failover takes instead of racing it (a 2-core machine running the whole suite beside a busy
// process once took longer than the fixed 7.5 s this test used to allow); it fails only past
// RECOVERY_BOUND_MS. Every action answered 200 that is in the stream after the failover reaches
// the display exactly once; an acknowledged action the old master had not yet replicated is lost
// (Redis replication is asynchronous), and only actions acknowledged just before the kill may be:
// the test counts them.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeActionEntry } from '../../schemas/action-entry.js';
import { configFile, spawnBridge, stopProcess } from '../helpers/bridge.js';
import { audiencectlJson } from '../helpers/cli.js';
import { recordFigure } from '../helpers/figures.js';
import { spawnGateway } from '../helpers/gateway-process.js';
import { DEMO_LAYOUT, eventually, postAction, postJson } from '../helpers/gateway.js';
import { useRedisCluster } from '../helpers/redis-cluster.js';
import { UdpSink } from '../helpers/udp-sink.js';

const cluster = useRedisCluster({ nodeTimeoutMs: 1000 });
const children: ChildProcess[] = [];
const sink = new UdpSink();
afterAll(async () => {
  for (const c of children) await stopProcess(c, 'SIGKILL');
  await sink.stop();
});

/** The answers must have been 200 this long after the last 503 for the slot to count as back. */
const STEADY_MS = 2000;
/** The failover must be over by then (after the kill): several failed elections' worth of a 1 s node timeout. */
const RECOVERY_BOUND_MS = 30_000;

interface Answer {
  value: string;
  status: number;
  /** performance.now() when the answer came */
  at: number;
}

describe('failover', () => {
  it('kill -9 of a layout’s master under load: 503 while its slot has no master, 200 after; what was kept arrives once', async () => {
    const prefix = 'fo:';
    const env = { REDIS_URL: 'redis://127.0.0.1:1', REDIS_PREFIX: prefix, REDIS_CLUSTER_NODES: cluster.get().seeds };
    const ctl = (...args: string[]) => audiencectlJson(env, ...args);
    const teamId = (await ctl('team', 'create', '--name', 'F')).teamId as string;
    const file = join(mkdtempSync(join(tmpdir(), 'ac-fo-')), 'layout.json');
    writeFileSync(file, JSON.stringify({ ...DEMO_LAYOUT, layoutId: 'fo-show' }));
    await ctl('layout', 'import', '--team', teamId, file);
    const apiKey = (await ctl('key', 'create', '--team', teamId)).apiKey as string;
    await sink.start();
    const gateway = await spawnGateway(env);
    children.push(gateway.child);
    const bridge = await spawnBridge(['--config', configFile({ redisUrl: 'redis://127.0.0.1:1', prefix, bridgeId: 'fo-bridge', layouts: [{ layoutId: 'fo-show', maxAgeMs: 60_000, targets: [{ host: '127.0.0.1', port: sink.port }] }] })], {
      REDIS_CLUSTER_NODES: cluster.get().seeds,
    });
    children.push(bridge.child);
    const token = (await postJson(`${gateway.url}/token`, { layoutId: 'fo-show' }, { 'x-api-key': apiKey })).body.token as string;
    const master = await cluster.get().masterOf(`${prefix}layout:{fo-show}:actions`);

    const answers: Answer[] = [];
    let killedAt = Infinity;
    let lastFailAt = -Infinity; // when the latest 503 came
    let back = false; // a 200 came after it
    // until the slot is back and has stayed back for STEADY_MS, or the bound has passed
    const running = () => performance.now() < killedAt + RECOVERY_BOUND_MS && !(back && performance.now() - lastFailAt >= STEADY_MS);
    const worker = async (w: number) => {
      for (let n = 0; running(); n++) {
        const value = `w${w}-${n}`;
        const r = await postAction(gateway, token, { layoutId: 'fo-show', lid: 5, type: 'String', value });
        const at = performance.now();
        answers.push({ value, status: r.status, at });
        if (r.status === 503) [lastFailAt, back] = [at, false];
        else if (r.status === 200 && lastFailAt > -Infinity) back = true;
        if (r.status !== 200) await new Promise((res) => setTimeout(res, 20)); // a client backing off
      }
    };
    const load = Promise.all([0, 1, 2, 3].map(worker));
    await new Promise((r) => setTimeout(r, 1500));
    killedAt = performance.now();
    await cluster.get().kill(master);
    await load;

    expect(new Set(answers.map((a) => a.status))).toEqual(new Set([200, 503]));
    const failed = answers.filter((a) => a.status === 503);
    const firstFail = Math.min(...failed.map((a) => a.at));
    const lastFail = Math.max(...failed.map((a) => a.at));
    const recovered = Math.min(...answers.filter((a) => a.status === 200 && a.at > lastFail).map((a) => a.at));
    expect(firstFail).toBeGreaterThan(killedAt);
    expect(recovered).toBeLessThan(killedAt + RECOVERY_BOUND_MS); // it came back, with no restart
    expect(Math.max(...answers.map((a) => a.at)) - lastFail).toBeGreaterThanOrEqual(STEADY_MS); // and stayed back
    recordFigure('cluster_failover_first_503_after_kill_ms', firstFail - killedAt, 'ms', 'the first request that hit the dead master');
    recordFigure('cluster_failover_recovered_after_kill_ms', recovered - killedAt, 'ms', 'first 200 after the last 503 (cluster-node-timeout 1000 ms)');
    recordFigure('cluster_failover_503_answers', failed.length, 'answers', `of ${answers.length}, 4 clients backing off 20 ms after a 503`);

    // What the new master kept: every acknowledged action in the stream arrives exactly once.
    const reader = new Cluster([{ host: '127.0.0.1', port: cluster.get().nodes.find((n) => n.port !== master)!.port }]);
    try {
      const entries = await reader.xrange(`${prefix}layout:{fo-show}:actions`, '-', '+');
      const kept = new Set(entries.map(([, f]) => decodeActionEntry(f)).flatMap((d) => (d.ok ? [d.entry.value as string] : [])));
      const acked = answers.filter((a) => a.status === 200);
      const lost = acked.filter((a) => !kept.has(a.value));
      recordFigure('cluster_failover_acknowledged_lost', lost.length, 'actions', `of ${acked.length} acknowledged (asynchronous replication, no WAIT)`);
      for (const a of lost) expect(a.at).toBeLessThan(killedAt + 50); // only what was acknowledged as the master died
      const delivered = acked.filter((a) => kept.has(a.value)).map((a) => a.value);
      await eventually(() => delivered.every((v) => sink.messages.some((m) => m.args[0]!.value === v)), 10_000);
      const counts = new Map<string, number>();
      for (const m of sink.messages) counts.set(m.args[0]!.value as string, (counts.get(m.args[0]!.value as string) ?? 0) + 1);
      expect(delivered.filter((v) => counts.get(v) !== 1)).toEqual([]);
    } finally {
      reader.disconnect();
    }
    expect(gateway.child.exitCode).toBeNull();
    expect(bridge.child.exitCode).toBeNull();
  }, 120_000);
});
