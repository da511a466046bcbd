// Writes a backlog of discrete actions (Index) to a layout stream, from a process of its own, as
// the gateway would: bench -- bridge runs the bridge in its own process, and a backlog written from
// there left the bridge a heap full of the writer's garbage, collected while it drained.
// Creates the bridge's consumer group at 0 first, so every entry is undelivered.
// Each entry's id is a random UUID, as the gateway makes them (gateway/actions/entry-id.ts). Ids of
// ten characters or fewer ("b123456", as this bench once wrote) are not what the bridge reads: V8's
// JSON.parse interns string values that short, so every id went into V8's string table, which
// grew with each drain, and each time it grew the bridge stopped for a copy of the whole table:
// 1.1 to 8.7 ms (perf, StringTable::Data::Resize), ticks as late.
//   node dist/bench/write-backlog.js <redis url> <stream key> <group> <count>
import { Redis } from 'ioredis';
import { entryId } from '../gateway/store/entry-id.js';
import { ACTION_FIELD, encodeActionEntry } from '../schemas/action-entry.js';

const [url, key, group, count] = process.argv.slice(2) as [string, string, string, string];
const total = Number(count);
const redis = new Redis(url);
try {
  await redis.xgroup('CREATE', key, group, '0', 'MKSTREAM');
  const now = Date.now();
  for (let i = 0; i < total; i += 1000) {
    const p = redis.pipeline();
    for (let j = i; j < Math.min(total, i + 1000); j++) {
      p.xadd(key, '*', ACTION_FIELD, encodeActionEntry({ v: 1, id: entryId(), layoutId: 'bench-show', lid: j % 4, address: `/00${j % 4}`, type: 'Index', value: j % 3, ts: now }));
    }
    await p.exec();
  }
  process.stdout.write(`wrote ${total}\n`);
} finally {
  redis.disconnect();
}
