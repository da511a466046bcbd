// Codec of action stream entries: one field `action` holding the entry as JSON.
// The gateway encodes; the bridge decodes and validates against action-entry.schema.json.
import type { ActionEntry } from './types.js';
import { describeFirstError, validateActionEntry } from './validators.js';

/** The stream field that holds an entry. */
export const ACTION_FIELD = 'action';

export function encodeActionEntry(entry: ActionEntry): string {
  return JSON.stringify(entry);
}

export type DecodeResult = { ok: true; entry: ActionEntry } | { ok: false; reason: string };

/**
 * Decodes the flat field list XREAD returns ([name, value, name, value, ...]). Never throws: any
 * input, however malformed, comes back as a reason. (A pending entry whose data was trimmed comes
 * back from XREADGROUP with nil fields; the reader counts those as lost before it gets here.)
 */
export function decodeActionEntry(fields: readonly unknown[] | null | undefined): DecodeResult {
  if (!Array.isArray(fields)) return { ok: false, reason: 'no fields' };
  let raw: unknown;
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === ACTION_FIELD) raw = fields[i + 1];
  if (raw === undefined) return { ok: false, reason: `no "${ACTION_FIELD}" field` };
  if (typeof raw !== 'string') return { ok: false, reason: `"${ACTION_FIELD}" is not text` };
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return { ok: false, reason: 'not JSON' };
  }
  if (!validateActionEntry(parsed)) return { ok: false, reason: describeFirstError(validateActionEntry.errors, 'entry') };
  return { ok: true, entry: parsed };
}
