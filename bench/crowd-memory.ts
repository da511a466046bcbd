// What the crowd costs in a gateway's memory: one process's fold holds each participant's latest
// value (a rate window: each presser's last press) for every aggregated control, and each
// participant that acted holds a rate budget. Each figure is measured in a fresh Node process (so
// nothing else is collected meanwhile): N participants act once, the fold appends its summary to a
// real Redis, garbage is collected, and the heap's growth is divided by N. Each window is measured
// twice: participants without a zone, and spread over three zones (each folded as well).
//   npm run bench:lab -- crowd-memory [--participants 200000]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { ActionLog } from '../gateway/actions/action-log.js';
import { CrowdFold, type AggregatedControl } from '../gateway/crowd/crowd-fold.js';
import { startRedisServer } from '../dev/redis-server.js';
import { ParticipantLimits } from '../gateway/limits/participant-limits.js';
import { RedisKeys } from '../gateway/store/keys.js';
import type { AggregateMode } from '../schemas/aggregate.js';
import type { ActionValue, ControlType } from '../schemas/types.js';

const { values } = parseArgs({ options: { participants: { type: 'string', default: '200000' }, case: { type: 'string', default: '' }, redis: { type: 'string', default: '' } } });
const N = Number(values.participants);

const CASES: Record<string, [AggregateMode, ControlType, (i: number) => ActionValue]> = {
  mean: ['mean', 'Slider', (i) => (i % 1000) / 1000],
  median: ['median', 'Slider', (i) => (i % 1000) / 1000],
  fraction: ['fraction', 'Toggle', (i) => i % 2 === 0],
  votes: ['votes', 'Index', (i) => i % 3],
  centroid: ['centroid', 'XYPad', (i) => [(i % 100) / 100, (i % 37) / 37]],
  rate: ['rate', 'Button', () => null],
};

/** One figure, in this process: heap bytes per participant. */
async function measure(which: string, redisUrl: string): Promise<number> {
  const gc = (globalThis as { gc?: () => void }).gc!;
  const heap = () => {
    gc();
    gc();
    return process.memoryUsage().heapUsed;
  };
  const subs = Array.from({ length: N }, (_, i) => `aud_${i.toString(36).padStart(16, '0')}`); // as long as a token's sub
  const client = new Redis(redisUrl);
  try {
    if (which === 'budget') {
      const rates = { actions: { ratePerSecond: 20, burst: 40 }, strings: { ratePerSecond: 1, burst: 5 } };
      const limits = new ParticipantLimits(N * 2);
      const before = heap();
      for (let i = 0; i < N; i++) limits.check(subs[i]!, 'String', rates);
      const bytes = (heap() - before) / N;
      limits.stop();
      return bytes;
    }
    const [name = '', zoned] = which.split('@');
    const [mode, type, value] = CASES[name]!;
    const zoneOf = (i: number) => (zoned ? ['left', 'right', 'balcony'][i % 3]! : '');
    const control = { lid: 1, address: '/001', type, props: { label: mode }, ...(type === 'Index' && { options: [0, 1, 2].map((index) => ({ index, label: String(index) })) }), aggregate: { mode, windowMs: 600_000 } } as AggregatedControl;
    const fold = new CrowdFold(new ActionLog(client, new RedisKeys('bench:'), { maxLen: 1000, retentionMs: 600_000 }), `gw-${which}`, 10, { maxParticipants: N + 1 });
    await fold.add('show', control, 'warm-up', value(0), Date.now()); // the window and the Redis script exist before the baseline
    const before = heap();
    const now = Date.now();
    let answered: Promise<void>[] = [];
    for (let i = 0; i < N; i++) answered.push(fold.add('show', control, subs[i]!, value(i), now, zoneOf(i)));
    await Promise.all(answered);
    answered = [];
    const bytes = (heap() - before) / N;
    if (fold.participants() !== N + 1) throw new Error(`the fold holds ${fold.participants()} participants, not ${N + 1}`);
    fold.stop();
    return bytes;
  } finally {
    client.disconnect();
  }
}

if (values.case) {
  console.log(String(await measure(values.case, values.redis)));
} else {
  const dir = mkdtempSync(join(tmpdir(), 'ac-crowd-memory-'));
  const server = await startRedisServer({ dir });
  try {
    const run = (which: string) => Number(execFileSync(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), '--case', which, '--redis', server.url, '--participants', String(N)], { encoding: 'utf8' }).trim());
    console.log(`Gateway memory per participant, ${N.toLocaleString('en')} participants in one process (Node ${process.version}):\n`);
    console.log('| what | heap bytes per participant | in three zones |\n|---|---|---|');
    for (const which of Object.keys(CASES)) console.log(`| crowd window, ${CASES[which]![1]} ${which} | ${run(which).toFixed(0)} | ${run(`${which}@zones`).toFixed(0)} |`);
    console.log(`| rate budgets (actions and String) | ${run('budget').toFixed(0)} | |`);
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
