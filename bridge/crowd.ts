// Crowd values as OSC. The bridge merges the summaries of every gateway process with
// schemas/crowd-merge.ts (the merge the gateway's live channel sends to phones) and sends each value
// as `<address>` with the value (,f mean, median, trimmed mean, fraction and rate; ,ff centroid; one
// ,i per option for votes), `<address>/n` ,i the participants counted, for Slider modes
// `<address>/sd` ,f their standard deviation, and for each zone that counts someone
// `<address>/zone/<zone>` (the same value types) and `<address>/zone/<zone>/n` ,i. A crowd cue goes
// out as `<address>/cue` ,i (bridge/cues.ts).
import { toBuffer, type TimeTag } from 'osc-min';
import type { CrowdValue } from '../schemas/crowd-merge.js';
import type { OscArg } from './osc.js';

/** One OSC message of a crowd value or cue: its address and typed arguments. */
export interface CrowdMessage {
  address: string;
  args: OscArg[];
}

const INT32_MAX = 2 ** 31 - 1;
const f = (value: number) => ({ type: 'float' as const, value });
/** OSC ints are 32-bit: a count merged over many sources is capped rather than failing the bundle. */
const i = (value: number) => ({ type: 'integer' as const, value: Math.min(value, INT32_MAX) });

/** The OSC messages of a crowd value, in the order they go out. */
export function crowdMessages(v: CrowdValue): CrowdMessage[] {
  const value = v.mode === 'votes' ? v.value.map(i) : v.value.map(f);
  const out: CrowdMessage[] = [
    { address: v.address, args: value },
    { address: `${v.address}/n`, args: [i(v.n)] },
  ];
  if (v.sd !== undefined) out.push({ address: `${v.address}/sd`, args: [f(v.sd)] });
  for (const [zone, z] of Object.entries(v.zones ?? {})) {
    out.push({ address: `${v.address}/zone/${zone}`, args: v.mode === 'votes' ? z.value.map(i) : z.value.map(f) }, { address: `${v.address}/zone/${zone}/n`, args: [i(z.n)] });
  }
  return out;
}

/** A crowd cue's message: the winning index of a vote, or 1 and 0 of a threshold. */
export function cueMessage(address: string, value: number): CrowdMessage {
  return { address: `${address}/cue`, args: [i(value)] };
}

/**
 * The messages of crowd values and cues (one list each) as datagrams: one bundle for all of them
 * while it fits in `maxBytes`, else one bundle each.
 */
export function crowdDatagrams(perValue: readonly CrowdMessage[][], tag: TimeTag, maxBytes: number): { datagrams: Buffer[]; messages: number } {
  const bundle = (messages: CrowdMessage[]) => {
    const view = toBuffer({ timetag: tag, elements: messages });
    return Buffer.from(view.buffer, view.byteOffset, view.byteLength);
  };
  const whole = bundle(perValue.flat());
  return { datagrams: whole.length <= maxBytes ? [whole] : perValue.map(bundle), messages: perValue.reduce((n, m) => n + m.length, 0) };
}
