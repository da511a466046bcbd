// Reading a layout's show record (schemas/show-record.ts): its entries between two moments, each
// with the moment its stream id says. The writers are the scripts that make the events (page
// switches, moderation decisions, in gateway/store/lua; cue firings and crowd samples, in schemas/bridge-functions.lua).
import type { RedisClient } from '../../runtime/redis.js';
import { RECORD_FIELD, type RecordEntry } from '../../schemas/show-record.js';
import { validateRecordEntry } from '../../schemas/validators.js';
import type { RedisKeys } from './keys.js';

/** The record's bounds: how long an entry is kept (ms), the JSON a layout's record holds at most. */
export interface RecordBounds {
  retentionMs: number;
  maxBytes: number;
}

export type TimedEntry = RecordEntry & { at: number };

/** Entries read per XRANGE call. */
const PAGE = 1000;

export class ShowRecordStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
  ) {}

  /**
   * The entries from `from` to `to` (ms, both included), oldest first, and how many entries in
   * that span were not an entry as show-record-entry.schema.json declares it (not JSON, another
   * shape: written by hand, by another version, or with a bridge's credential): skipped, so one bad
   * entry cannot stop an export, and counted, so the export says so.
   */
  async read(layoutId: string, from = 0, to = Number.MAX_SAFE_INTEGER): Promise<{ entries: TimedEntry[]; unreadable: number }> {
    const key = this.keys.showRecord(layoutId).stream;
    const entries: TimedEntry[] = [];
    let unreadable = 0;
    let start = `${Math.max(0, Math.floor(from))}-0`;
    for (;;) {
      const page = await this.redis.xrange(key, start, `${Math.floor(to)}-18446744073709551615`, 'COUNT', PAGE);
      for (const [id, fields] of page) {
        const entry = parseEntry(fields[fields.indexOf(RECORD_FIELD) + 1]);
        if (entry) entries.push({ ...entry, at: Number(id.slice(0, id.indexOf('-'))) });
        else unreadable++;
      }
      if (page.length < PAGE) return { entries, unreadable };
      start = `(${page[page.length - 1]![0]}`;
    }
  }
}

/** One entry's JSON as its schema declares it, or null. */
function parseEntry(text: string | undefined): RecordEntry | null {
  let value: unknown;
  try {
    value = JSON.parse(text ?? '');
  } catch {
    return null; // not JSON: counted as unreadable by the caller
  }
  return validateRecordEntry(value) ? value : null;
}
