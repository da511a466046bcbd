// Pure OSC mapping: an action entry -> an OSC message, and messages -> bundle datagrams.
// No sockets here; every byte is unit-tested.
import { toBuffer, type OscArgInput, type OscMessageInput, type TimeTag } from 'osc-min';
import type { ActionEntry } from '../schemas/types.js';

export type BooleanMode = 'int' | 'TF';

/** OSC timetag meaning "immediately" (OSC 1.0). */
export const IMMEDIATE: TimeTag = [0, 1];
const NTP_EPOCH_OFFSET_S = 2_208_988_800;

/** The NTP timetag of a Unix time in ms, or IMMEDIATE for `null`. */
export function timetag(unixMs: number | null): TimeTag {
  if (unixMs === null) return IMMEDIATE;
  const seconds = Math.floor(unixMs / 1000);
  const fraction = Math.round(((unixMs - seconds * 1000) / 1000) * 2 ** 32);
  return [seconds + NTP_EPOCH_OFFSET_S, Math.min(fraction, 2 ** 32 - 1)];
}

/** -0 is sent as 0 (some receivers print or compare it differently). */
function float(v: number): OscArgInput {
  return { type: 'float', value: Object.is(v, -0) ? 0 : v };
}

function int(v: number): OscArgInput {
  return { type: 'integer', value: v };
}

/** The OSC message for an action, to the control's address. */
export function toOscMessage(e: Pick<ActionEntry, 'address' | 'type' | 'value'>, booleans: BooleanMode): OscMessageInput & { address: string } {
  const args: OscArgInput[] = [];
  switch (e.type) {
    case 'Button':
      args.push(int(1));
      break;
    case 'Slider':
      args.push(float(e.value as number));
      break;
    case 'Toggle':
      if (booleans === 'TF') args.push(e.value === true ? { type: 'true' } : { type: 'false' });
      else args.push(int(e.value === true ? 1 : 0));
      break;
    case 'Index':
      args.push(int(e.value as number));
      break;
    case 'String':
      args.push({ type: 'string', value: e.value as string });
      break;
    case 'XYPad': {
      const [x, y] = e.value as [number, number];
      args.push(float(x), float(y));
      break;
    }
  }
  return { address: e.address, args };
}

/** Encoded OSC message bytes. */
export function encodeMessage(m: OscMessageInput): Buffer {
  const view = toBuffer(m);
  return Buffer.from(view.buffer, view.byteOffset, view.byteLength);
}

/** A group of encoded messages sharing one timetag. */
export interface TimedGroup {
  timetag: TimeTag;
  messages: Buffer[];
}

const BUNDLE_HEADER = Buffer.from('#bundle\0', 'latin1');

/** An OSC bundle of already-encoded elements, written into one buffer (no per-element allocation). */
export function bundle([seconds, fraction]: TimeTag, elements: readonly Buffer[]): Buffer {
  let size = BUNDLE_HEADER.length + 8;
  for (const e of elements) size += 4 + e.length;
  const out = Buffer.allocUnsafe(size);
  BUNDLE_HEADER.copy(out, 0);
  out.writeUInt32BE(seconds >>> 0, 8);
  out.writeUInt32BE(fraction >>> 0, 12);
  let at = 16;
  for (const e of elements) {
    out.writeInt32BE(e.length, at);
    e.copy(out, at + 4);
    at += 4 + e.length;
  }
  return out;
}

/** "#bundle\0" and the timetag. */
const BUNDLE_HEAD = 16;
/** What wrapping a group in its own inner bundle costs: its size prefix and its head. */
const INNER_BUNDLE = 4 + BUNDLE_HEAD;

const sameTag = (a: TimeTag, b: TimeTag) => a[0] === b[0] && a[1] === b[1];

export interface Packed {
  datagrams: Buffer[];
  /** OSC bundles in them: one per flat datagram, 1 + one per timetag for a nested one */
  bundles: number;
}

/**
 * Packs timed groups (in order) into datagrams of at most `maxBytes`. A datagram holding one
 * timetag is a flat bundle with it; one holding several is an "immediately" bundle of
 * per-timetag bundles. A single message larger than `maxBytes` travels alone.
 */
export function packDatagrams(groups: TimedGroup[], maxBytes: number): Packed {
  const out: Buffer[] = [];
  let bundles = 0;
  let current: TimedGroup[] = [];
  let nestedSize = BUNDLE_HEAD; // the size of `current` sent as a bundle of inner bundles
  const sizeOf = (groupCount: number, nested: number) => (groupCount === 1 ? nested - INNER_BUNDLE : nested);
  const flush = () => {
    if (current.length === 1) out.push(bundle(current[0]!.timetag, current[0]!.messages));
    else if (current.length > 1) out.push(bundle(IMMEDIATE, current.map((g) => bundle(g.timetag, g.messages))));
    bundles += current.length > 1 ? 1 + current.length : current.length;
    current = [];
    nestedSize = BUNDLE_HEAD;
  };
  for (const g of groups) {
    for (const msg of g.messages) {
      const tail = current[current.length - 1];
      const joinsTail = tail !== undefined && sameTag(tail.timetag, g.timetag);
      const grown = nestedSize + 4 + msg.length + (joinsTail ? 0 : INNER_BUNDLE);
      if (current.length > 0 && sizeOf(current.length + (joinsTail ? 0 : 1), grown) > maxBytes) {
        flush();
        current.push({ timetag: g.timetag, messages: [msg] });
        nestedSize = BUNDLE_HEAD + INNER_BUNDLE + 4 + msg.length;
      } else {
        if (joinsTail) tail.messages.push(msg);
        else current.push({ timetag: g.timetag, messages: [msg] });
        nestedSize = grown;
      }
    }
  }
  flush();
  return { datagrams: out, bundles };
}
