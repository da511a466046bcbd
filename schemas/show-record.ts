// The show record, as the gateway and the bridges write it and audiencectl and the team page read
// it: one stream per layout (redis-keys.ts), one entry per event, field `r` holding one of the
// entries below as JSON; the entry's id is the moment (Redis's clock). The Lua that appends to it,
// with its bounds, is show-record.lua beside this file: a script includes it with the line
// `--!include show-record.lua` (withIncludes).
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const RECORD_FIELD = 'r';

/** The record's bounds when no gateway set them yet (SHOW_RECORD_RETENTION_SECONDS, SHOW_RECORD_MAX_BYTES). */
export const RECORD_DEFAULTS = { retentionMs: 7 * 24 * 3600 * 1000, maxBytes: 16 * 1024 * 1024 } as const;

/** How often a crowd value is sampled at most, while it changes. */
export const RECORD_SAMPLE_MS = 1000;

/** An aggregated control's crowd value at a moment: the value the bridge sends (votes: counts per option), and participants counted. */
export interface RecordedCrowd {
  lid: number;
  value: number[];
  n: number;
}

/** The active page switched; `values`: the crowd values of the page left, as last sampled. */
export interface PageEntry {
  kind: 'page';
  from: string;
  to: string;
  by: string;
  values: RecordedCrowd[];
}

/** A crowd cue fired: its value (a vote's index; a threshold's 1 or 0), and the crowd at that moment. */
export interface CueEntry {
  kind: 'cue';
  lid: number;
  value: number;
  crowd: number[];
  n: number;
  by: string;
}

/** A moderator's decision on a held text (a mute without a text at hand has no item). */
export interface ModerationEntry {
  kind: 'moderation';
  decision: 'approve' | 'reject' | 'mute' | 'unmute';
  item: string | null;
  by: string;
  sub: string;
  lid: number | null;
  text: string | null;
}

/** An aggregated control's crowd value, sampled once a second while it changes. */
export interface CrowdEntry extends RecordedCrowd {
  kind: 'crowd';
}

export type RecordEntry = PageEntry | CueEntry | ModerationEntry | CrowdEntry;

const HERE = dirname(fileURLToPath(import.meta.url));
const INCLUDE = /^--!include ([a-z-]+\.lua)$/m;

/** A Lua script with each `--!include <file>` line replaced by that file of this folder. */
export function withIncludes(script: string): string {
  let out = script;
  for (let m = INCLUDE.exec(out); m; m = INCLUDE.exec(out)) out = out.replace(m[0], () => readFileSync(join(HERE, m[1]!), 'utf8'));
  return out;
}
