// The venue bridge's Redis functions (bridge-functions.lua beside this file): what the gateway and
// audiencectl load (FUNCTION LOAD REPLACE on every master) and the bridge calls with FCALL. A
// bridge's Redis user may call these and run no Lua of its own.
import { readFileSync } from 'node:fs';
import { withIncludes } from './show-record.js';

/** The library's name; its functions' names end in the same version. */
export const BRIDGE_LIBRARY = 'audience_bridge_1';

export const BRIDGE_FUNCTIONS = {
  /** KEYS: the action stream. ARGV: the bridge's group, the most entries to count one by one. */
  settleTrimmed: 'ac_settle_trimmed_1',
  /** KEYS: the cue hash, the show record, its state. ARGV: see the Lua header. */
  fireCue: 'ac_fire_cue_1',
  /** KEYS: the show record, its state. ARGV: see the Lua header. */
  sampleCrowd: 'ac_sample_crowd_1',
} as const;

/** The library's source, its includes in place, as FUNCTION LOAD takes it. */
export function bridgeFunctionsSource(): string {
  return withIncludes(readFileSync(new URL('./bridge-functions.lua', import.meta.url), 'utf8'));
}
