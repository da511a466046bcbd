// Codec of action stream entries: one field `action` holding the entry as JSON, either an action
// (v 1, action-entry.schema.json) or a crowd summary (v 2, crowd-summary.schema.json).
// The gateway encodes; the bridge decodes and validates against action-entry.schema.json.
import { compactBins, denseBins, type CrowdFigures, type CrowdSummary, type SparseBins } from './aggregate.js';
import type { ActionEntry } from './types.js';
import { WHOLE_DOCUMENT, describeFirstError, validateActionEntry, validateCrowdSummary } from './validators.js';

/** The stream field that holds an entry. */
export const ACTION_FIELD = 'action';

/**
 * An action entry's text, in its fixed field order, as parts: ENTRY_PREFIX, the id, the control's
 * part (entryControlPart: the five fields every entry of one control shares), the value's JSON,
 * ENTRY_TS, the time and `}`. The gateway's hot path writes entries byte by byte from these parts
 * (gateway/actions/entry-batch.ts); encodeActionEntry joins the same parts.
 */
export const ENTRY_PREFIX = '{"v":1,"id":"';
/** Between the value and the time. */
export const ENTRY_TS = ',"ts":';
/** `","layoutId":…,"value":`: from the id's closing quote to the value. */
export function entryControlPart(layoutId: string, lid: number, address: string, type: string): string {
  return `","layoutId":${JSON.stringify(layoutId)},"lid":${JSON.stringify(lid)},"address":${JSON.stringify(address)},"type":${JSON.stringify(type)},"value":`;
}

export function encodeActionEntry(e: ActionEntry): string {
  return `${ENTRY_PREFIX}${JSON.stringify(e.id).slice(1, -1)}${entryControlPart(e.layoutId, e.lid, e.address, e.type)}${JSON.stringify(e.value)}${ENTRY_TS}${JSON.stringify(e.ts)}}`;
}

/** Figures as they go on the wire: their bins (hist, histSum, votes) sparse where that is shorter. */
function compactFigures<T extends CrowdFigures>(f: T): T {
  const { hist, histSum, votes } = f;
  return { ...f, ...(hist && { hist: compactBins(hist) }), ...(histSum && { histSum: compactBins(histSum) }), ...(votes && { votes: compactBins(votes) }) };
}

/** A summary as it goes on the wire: its bins (and each zone's) sparse where that is shorter. */
export function encodeCrowdSummary(summary: CrowdSummary): string {
  const zones = summary.zones && Object.fromEntries(Object.entries(summary.zones).map(([z, f]) => [z, compactFigures(f)]));
  return JSON.stringify({ ...compactFigures(summary), ...(zones && { zones }) });
}

type Bins = 'hist' | 'histSum' | 'votes';
/** Figures as validated: their bins dense or sparse. */
type WireFigures<T extends CrowdFigures> = Omit<T, Bins> & Partial<Record<Bins, number[] | SparseBins>>;

/** Figures with their bins dense, or why a sparse form does not fit its length. */
function denseFigures<T extends CrowdFigures>(wire: WireFigures<T>, where: string): T | string {
  const out = { ...wire } as unknown as T;
  for (const k of ['hist', 'histSum', 'votes'] as const) {
    const bins = wire[k];
    if (bins === undefined) continue;
    const dense = denseBins(bins);
    if (!dense) return `${where} ${k} points at a bin outside its length`;
    out[k] = dense;
  }
  return out;
}

/** A validated summary with its bins (and its zones' bins) dense, or why a sparse form does not fit its length. */
function expandBins(wire: WireFigures<CrowdSummary> & { zones?: Record<string, WireFigures<CrowdFigures>> }): StreamEntryResult {
  const out = denseFigures<CrowdSummary>(wire, 'summary');
  if (typeof out === 'string') return { ok: false, reason: out };
  if (wire.zones) {
    const zones: Record<string, CrowdFigures> = {};
    for (const [z, f] of Object.entries(wire.zones)) {
      const dense = denseFigures<CrowdFigures>(f, `summary zone "${z}"`);
      if (typeof dense === 'string') return { ok: false, reason: dense };
      zones[z] = dense;
    }
    out.zones = zones;
  }
  return { ok: true, summary: out };
}

export type DecodeResult = { ok: true; entry: ActionEntry } | { ok: false; reason: string };
export type StreamEntryResult = DecodeResult | { ok: true; summary: CrowdSummary };

/** The parsed JSON of an entry's `action` field, or why there is none. */
function parseFields(fields: readonly unknown[] | null | undefined): { ok: true; parsed: unknown } | { ok: false; reason: string } {
  if (!Array.isArray(fields)) return { ok: false, reason: 'no fields' };
  let raw: unknown;
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === ACTION_FIELD) raw = fields[i + 1];
  if (raw === undefined) return { ok: false, reason: `no "${ACTION_FIELD}" field` };
  if (typeof raw !== 'string') return { ok: false, reason: `"${ACTION_FIELD}" is not text` };
  try {
    return { ok: true, parsed: JSON.parse(raw) };
  } catch {
    return { ok: false, reason: 'not JSON' };
  }
}

/**
 * Decodes an action entry from the flat field list XREAD returns ([name, value, name, value, ...]).
 * Never throws: any input, however malformed, comes back as a reason. (A pending entry whose data
 * was trimmed comes back from XREADGROUP with nil fields; the reader counts those as lost before it
 * gets here.)
 */
export function decodeActionEntry(fields: readonly unknown[] | null | undefined): DecodeResult {
  const p = parseFields(fields);
  return p.ok ? asActionEntry(p.parsed) : p;
}

function asActionEntry(parsed: unknown): DecodeResult {
  if (!validateActionEntry(parsed, WHOLE_DOCUMENT)) return { ok: false, reason: describeFirstError(validateActionEntry.errors, 'entry') };
  return { ok: true, entry: parsed };
}

/** Decodes any entry of a layout's stream: an action (v 1) or a crowd summary (v 2). Never throws. */
export function decodeStreamEntry(fields: readonly unknown[] | null | undefined): StreamEntryResult {
  const p = parseFields(fields);
  if (!p.ok) return p;
  if (typeof p.parsed === 'object' && p.parsed !== null && (p.parsed as { v?: unknown }).v === 2) {
    if (!validateCrowdSummary(p.parsed, WHOLE_DOCUMENT)) return { ok: false, reason: describeFirstError(validateCrowdSummary.errors, 'summary') };
    return expandBins(p.parsed);
  }
  return asActionEntry(p.parsed);
}

/** A crowd summary as a gateway process publishes it (the stream entry's text), or null if it is not a valid one. */
export function decodeCrowdSummary(text: string): CrowdSummary | null {
  const r = decodeStreamEntry([ACTION_FIELD, text]);
  return r.ok && 'summary' in r ? r.summary : null;
}
