// The reader's XREADGROUP and XAUTOCLAIM go out as StreamCommands (bridge/stream-command.ts):
// ioredis Commands that settle through methods. They answer as ioredis's `call` does, fail as it
// does, and, unlike ioredis's own Command, leave the young-generation collector nothing of their
// replies to keep while V8 runs the code unoptimised.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { sendStreamCommand } from '../../bridge/stream-command.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';

const redis = useRedis();

type Entries = [string, string[] | null][];
type ReadReply = [string, Entries][] | null;

describe('StreamCommand', () => {
  it('answers XREADGROUP and XAUTOCLAIM with strings, and a deleted pending entry with nil fields, as call() does', async () => {
    const c = redis.get().client;
    const key = `${randomPrefix()}stream`;
    await c.xgroup('CREATE', key, 'g', '0', 'MKSTREAM');
    const first = await c.xadd(key, '*', 'action', '{"n":1}');
    const second = await c.xadd(key, '*', 'action', '{"n":2}');
    const read = await sendStreamCommand<ReadReply>(c, 'XREADGROUP', ['GROUP', 'g', 'me', 'COUNT', 10, 'STREAMS', key, '>']);
    expect(read).toEqual([[key, [[first, ['action', '{"n":1}']], [second, ['action', '{"n":2}']]]]]);
    expect(read).toEqual(await c.call('XREADGROUP', 'GROUP', 'g', 'me', 'COUNT', 10, 'STREAMS', key, '0'));
    await c.xdel(key, first!);
    const pending = await sendStreamCommand<ReadReply>(c, 'XREADGROUP', ['GROUP', 'g', 'me', 'COUNT', 10, 'STREAMS', key, '0']);
    expect(pending).toEqual([[key, [[first, null], [second, ['action', '{"n":2}']]]]]);
    const claimed = await sendStreamCommand<[string, Entries, string[]]>(c, 'XAUTOCLAIM', [key, 'g', 'other', 0, '0-0', 'COUNT', 10]);
    expect(claimed).toEqual(['0-0', [[second, ['action', '{"n":2}']]], [first]]);
  });

  it('rejects with the Redis error (a missing group) and with ioredis\'s command timeout (a BLOCK longer than it)', async () => {
    const c = redis.get().client;
    const key = `${randomPrefix()}stream`;
    await expect(sendStreamCommand(c, 'XREADGROUP', ['GROUP', 'nogroup', 'me', 'STREAMS', key, '>'])).rejects.toThrow(/NOGROUP/);
    await c.xgroup('CREATE', key, 'g', '$', 'MKSTREAM');
    const impatient = new Redis(redis.get().server.url, { commandTimeout: 50 });
    try {
      await expect(sendStreamCommand(impatient, 'XREADGROUP', ['GROUP', 'g', 'me', 'BLOCK', 5000, 'STREAMS', key, '>'])).rejects.toThrow('Command timed out');
    } finally {
      impatient.disconnect();
    }
  });

  it("leaves nothing of its replies to the young-generation collector in unoptimised code, where ioredis's Command keeps them all", async () => {
    // 1,000 replies of 64 stream entries each (after 200 more first), settled one after another as ioredis's reply handler
    // does, under --jitless (no optimising tier, as in a bridge's first half second) with an old
    // generation large enough that no full collection runs: what the scavenges kept is what the
    // old space grew by.
    const oldSpaceGrowth = (kind: 'ioredis' | 'stream') =>
      new Promise<number>((resolve, reject) => {
        const script = `
          import { getHeapSpaceStatistics } from 'node:v8';
          import { Command } from 'ioredis';
          import { StreamCommand } from ${JSON.stringify(fileURLToPath(new URL('../../dist/bridge/stream-command.js', import.meta.url)))};
          const oldSpace = () => getHeapSpaceStatistics().find((s) => s.space_name === 'old_space').space_used_size;
          const value = Buffer.from(JSON.stringify({ v: 1, id: 'x'.repeat(160), layoutId: 'show', lid: 1 }));
          const reply = (i) => [[Buffer.from('stream'), Array.from({ length: 64 }, (_, j) => [Buffer.from(i + '-' + j), [Buffer.from('action'), value]])]];
          let before = 0;
          for (let i = 0; i < 1200; i++) {
            if (i === 200) before = oldSpace(); // the code's own first-run allocations are behind it
            const cmd = ${JSON.stringify(kind)} === 'ioredis' ? new Command('XREADGROUP', [], { replyEncoding: 'utf8' }) : new StreamCommand('XREADGROUP', []);
            setImmediate(() => cmd.resolve(reply(i)));
            await cmd.promise;
          }
          process.stdout.write(String(oldSpace() - before));`;
        execFile(process.execPath, ['--jitless', '--initial-heap-size=128', '--input-type=module', '-e', script], { cwd: fileURLToPath(new URL('../..', import.meta.url)), timeout: 60_000 }, (err, stdout, stderr) =>
          err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(Number(stdout)),
        );
      });
    const [ioredis, stream] = await Promise.all([oldSpaceGrowth('ioredis'), oldSpaceGrowth('stream')]);
    const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;
    process.stdout.write(`figure: old space grown by 1,000 replies of 64 entries, unoptimised: ioredis Command ${mib(ioredis)}, StreamCommand ${mib(stream)}\n`);
    expect(ioredis).toBeGreaterThan(10 * 2 ** 20); // the replies, promoted
    expect(stream).toBeLessThan(ioredis / 10);
  }, 90_000);
});
