// What an entry of a layout's stream takes on the bridge's Redis link, for the sizing table
// (bench/sizing.ts): `npm run bench` plays CROWD_MIX on the demo layout's aggregated controls, then
// measures the stream's last entries with entryWireBytes.
import { Redis } from 'ioredis';
import { ACTION_FIELD } from '../schemas/action-entry.js';

/** Actions on the demo layout's aggregated controls (crowd brightness, the vote, the crowd strobe). */
export const CROWD_MIX: ((i: number) => object)[] = [
  (i) => ({ lid: 10, type: 'Slider', value: (i % 101) / 100 }),
  (i) => ({ lid: 11, type: 'Index', value: i % 3 }),
  (i) => ({ lid: 12, type: 'Toggle', value: i % 2 === 0 }),
];

/**
 * The mean bytes of the stream's last entries as the bridge reads them (RESP: the entry's id and
 * its one field and value), actions and crowd summaries apart.
 */
export async function entryWireBytes(redisUrl: string, key: string): Promise<{ action: number; actions: number; summary: number; summaries: number }> {
  const redis = new Redis(redisUrl);
  try {
    const entries = await redis.xrevrange(key, '+', '-', 'COUNT', 5000);
    const bulk = (s: string) => `$${Buffer.byteLength(s)}\r\n`.length + Buffer.byteLength(s) + 2;
    const sums = { action: { bytes: 0, n: 0 }, summary: { bytes: 0, n: 0 } };
    for (const [id, fields] of entries) {
      const value = fields[fields.indexOf(ACTION_FIELD) + 1] ?? '';
      const kind = (JSON.parse(value) as { v?: number }).v === 2 ? sums.summary : sums.action;
      kind.bytes += '*2\r\n'.length + bulk(id) + '*2\r\n'.length + bulk(ACTION_FIELD) + bulk(value);
      kind.n += 1;
    }
    return { action: sums.action.bytes / sums.action.n, actions: sums.action.n, summary: sums.summary.bytes / sums.summary.n, summaries: sums.summary.n };
  } finally {
    redis.disconnect();
  }
}
