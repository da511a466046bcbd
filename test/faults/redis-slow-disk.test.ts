// Redis on a slow disk, killed (-9) under load. strace's fault injection holds every fsync of its
// AOF for a second, as a disk busy with other writes does. With `appendfsync always` (the setting
// docs/operations.md gives for no acknowledged loss) Redis answers a write only once the write is
// in its AOF, so every action the gateway answered 200 is in the stream after the restart. With
// `everysec`, Redis answers writes made while its background fsync runs before it has written them
// to the AOF at all, and the kill loses them.
import { spawn, type ChildProcess } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { recordFigure } from '../helpers/figures.js';
import { eventually, postAction, useGatewayWithToken } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';

/** as long as Redis's once-a-second background fsync (everysec), so one is nearly always running */
const FSYNC_DELAY_MS = 1000;

const redis = useRedis(['--appendfsync', 'always']);
// a write waits for its fsync: the gateway waits for it longer than its default 400 ms
const g = useGatewayWithToken(() => redis.get().server.url, { overrides: { redisCommandTimeoutMs: 3 * FSYNC_DELAY_MS } });

/** Holds every fsync and fdatasync of the process (all its threads) for `ms`, until it exits. */
async function slowDisk(pid: number, ms: number): Promise<ChildProcess> {
  // -o: the calls go nowhere; stderr says when every thread is attached
  const strace = spawn('strace', ['-f', '-o', '/dev/null', '-p', String(pid), '-e', 'trace=fsync,fdatasync', '-e', `inject=fsync,fdatasync:delay_enter=${ms * 1000}`], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  strace.stderr.on('data', (d: Buffer) => (err += d.toString()));
  await eventually(() => / attached/.test(err) || strace.exitCode !== null);
  if (strace.exitCode !== null) throw new Error(`strace exited: ${err}`);
  return strace;
}

describe('Redis on a slow disk, killed under load', () => {
  it('with appendfsync always, never loses an action it answered 200 for', async () => {
    const stream = `${g.t.config.redisPrefix}layout:{${g.t.layoutId}}:actions`;
    const strace = await slowDisk(redis.get().server.pid!, FSYNC_DELAY_MS);
    const exited = new Promise((r) => strace.once('exit', r));
    const accepted: string[] = [];
    let seq = 0;
    let running = true;
    const client = async () => {
      while (running) {
        const value = `s${seq++}`;
        const r = await postAction(g.t, g.token, { layoutId: g.t.layoutId, lid: 5, type: 'String', value }).catch(() => null);
        if (r?.status === 200) accepted.push(value);
      }
    };
    const clients = Array.from({ length: 8 }, client);
    // several fsyncs, each with a batch of actions waiting on it
    await new Promise((r) => setTimeout(r, 3 * FSYNC_DELAY_MS));
    expect(accepted.length).toBeGreaterThan(0);
    await redis.get().server.kill();
    running = false;
    await Promise.all(clients);
    await exited; // strace ends with its tracee
    await redis.get().server.restart();

    let entries: [string, string[]][] = [];
    await eventually(async () => {
      const read = await redis.get().client.xrange(stream, '-', '+').catch(() => null);
      if (read) entries = read;
      return read !== null;
    });
    const inStream = new Set(entries.map(([, f]) => (JSON.parse(f[1]!) as { value: string }).value));
    recordFigure('redis_slow_disk_accepted_actions', accepted.length, 'actions', 'all in the stream');
    expect(accepted.filter((v) => !inStream.has(v))).toEqual([]); // no 200 without its entry
  });
});
