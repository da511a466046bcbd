// Writes a backlog of discrete actions (Index) to a layout stream, from a process of its own, as
// the gateway would: bench:bridge runs the bridge in its own process, and a backlog written from
// there left the bridge a heap full of the writer's garbage, collected while it drained.
// Creates the bridge's consumer group at 0 first, so every entry is undelivered.
//   node dist/bench/write-backlog.js <redis url> <stream key> <group> <count> <id prefix>
import { Redis } from 'ioredis';
import { ACTION_FIELD, encodeActionEntry } from '../schemas/action-entry.js';

const [url, key, group, count, prefix] = process.argv.slice(2) as [string, string, string, string, string];
const total = Number(count);
const redis = new Redis(url);
try {
  await redis.xgroup('CREATE', key, group, '0', 'MKSTREAM');
  const now = Date.now();
  for (let i = 0; i < total; i += 1000) {
    const p = redis.pipeline();
    for (let j = i; j < Math.min(total, i + 1000); j++) {
      p.xadd(key, '*', ACTION_FIELD, encodeActionEntry({ v: 1, id: `${prefix}${j}`, layoutId: 'bench-show', lid: j % 4, address: `/00${j % 4}`, type: 'Index', value: j % 3, ts: now }));
    }
    await p.exec();
  }
  process.stdout.write(`wrote ${total}\n`);
} finally {
  redis.disconnect();
}
