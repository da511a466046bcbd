// Pure OSC mapping: action entries -> OSC messages in bundle datagrams, each message encoded
// straight into its datagram's buffer (no buffer per message, none per bundle). No sockets here;
// every byte is unit-tested against osc-min's encoder.
import type { TimeTag } from 'osc-min';
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

/** What the OSC mapping reads of an entry. */
export type OscEntry = Pick<ActionEntry, 'address' | 'type' | 'value'>;

/** One OSC argument with its type, in osc-min's terms. */
export type OscArg = { type: 'integer' | 'float'; value: number } | { type: 'string'; value: string } | { type: 'true' | 'false' };

/** A message a target's route made: an address and typed arguments (bridge/routes.ts). */
export interface RoutedMessage {
  address: string;
  type: 'Args';
  value: readonly OscArg[];
}

/** What goes into a datagram: an entry as its control sends it, or a routed message. */
export type OscMessage = OscEntry | RoutedMessage;

/** Why OSC 1.0 cannot carry this entry, or null. (The entry schema already refuses these; this is the encoder's own guard.) */
export function oscRefusal(e: OscEntry): string | null {
  if (typeof e.value === 'string' && e.value.includes('\0')) return 'an OSC string cannot contain U+0000';
  if (e.address.includes('\0')) return 'an OSC address cannot contain U+0000';
  if (e.type === 'Index' && !(Number.isInteger(e.value) && (e.value as number) >= -(2 ** 31) && (e.value as number) < 2 ** 31)) return 'an OSC int is 32-bit';
  return null;
}

/** The type tag string of each message shape, NUL-padded to 4 bytes, made once. */
const TAG = {
  i: Buffer.from(',i\0\0', 'latin1'),
  f: Buffer.from(',f\0\0', 'latin1'),
  ff: Buffer.from(',ff\0', 'latin1'),
  s: Buffer.from(',s\0\0', 'latin1'),
  T: Buffer.from(',T\0\0', 'latin1'),
  F: Buffer.from(',F\0\0', 'latin1'),
};

/** An OSC string's size: its UTF-8 bytes and a NUL, padded to a multiple of 4. */
const stringSize = (s: string) => (Buffer.byteLength(s, 'utf8') + 4) & ~3;

const ARG_TAG: Record<OscArg['type'], string> = { integer: 'i', float: 'f', string: 's', true: 'T', false: 'F' };

/** The bytes an argument's value takes after the type tags. */
function argSize(a: OscArg): number {
  if (a.type === 'string') return stringSize(a.value);
  return a.type === 'integer' || a.type === 'float' ? 4 : 0;
}

/** The size in bytes of a message. */
export function messageSize(e: OscMessage, booleans: BooleanMode): number {
  if (e.type === 'Args') return stringSize(e.address) + ((e.value.length + 5) & ~3) + e.value.reduce((n, a) => n + argSize(a), 0); // "," and a tag each, NUL-padded
  const head = stringSize(e.address) + 4; // every type tag here fits in 4 bytes
  switch (e.type) {
    case 'String':
      return head + stringSize(e.value as string);
    case 'XYPad':
      return head + 8;
    case 'Toggle':
      return booleans === 'TF' ? head : head + 4;
    default:
      return head + 4;
  }
}

/** Writes an OSC string (UTF-8, NUL-terminated, padded to 4 bytes) at `at`; returns the offset after it. */
function writeString(buf: Buffer, at: number, s: string): number {
  const n = buf.write(s, at, 'utf8');
  const end = at + ((n + 4) & ~3);
  buf.fill(0, at + n, end);
  return end;
}

/** -0 is sent as 0 (some receivers print or compare it differently). */
function writeFloat(buf: Buffer, at: number, v: number): number {
  buf.writeFloatBE(v === 0 ? 0 : v, at);
  return at + 4;
}

/**
 * Writes the OSC message for an action, to the control's address, at `at` of `buf` (a datagram
 * being filled); returns the offset after it. Button: int 1. Slider: float. Toggle: int 1/0, or T/F.
 * Index: int. String: string. XYPad: two floats. A routed message: its typed arguments.
 */
export function writeMessage(buf: Buffer, at: number, e: OscMessage, booleans: BooleanMode): number {
  at = writeString(buf, at, e.address);
  switch (e.type) {
    case 'Args': {
      at = writeString(buf, at, `,${typeTags(e.value)}`);
      for (const a of e.value) {
        if (a.type === 'integer') at = buf.writeInt32BE(a.value, at);
        else if (a.type === 'float') at = writeFloat(buf, at, a.value);
        else if (a.type === 'string') at = writeString(buf, at, a.value);
      }
      return at;
    }
    case 'Button':
      TAG.i.copy(buf, at);
      buf.writeInt32BE(1, at + 4);
      return at + 8;
    case 'Slider':
      TAG.f.copy(buf, at);
      return writeFloat(buf, at + 4, e.value as number);
    case 'Toggle':
      if (booleans === 'TF') {
        (e.value === true ? TAG.T : TAG.F).copy(buf, at);
        return at + 4;
      }
      TAG.i.copy(buf, at);
      buf.writeInt32BE(e.value === true ? 1 : 0, at + 4);
      return at + 8;
    case 'Index':
      TAG.i.copy(buf, at);
      buf.writeInt32BE(e.value as number, at + 4);
      return at + 8;
    case 'String':
      TAG.s.copy(buf, at);
      return writeString(buf, at + 4, e.value as string);
    case 'XYPad': {
      const [x, y] = e.value as [number, number];
      TAG.ff.copy(buf, at);
      return writeFloat(buf, writeFloat(buf, at + 4, x), y);
    }
  }
}

/**
 * A message's arguments as typed values, the same that writeMessage encodes: for OSCQuery's TYPE,
 * RANGE and VALUE, and the messages it streams to a LISTEN.
 */
export function messageArgs(e: OscMessage, booleans: BooleanMode): readonly OscArg[] {
  switch (e.type) {
    case 'Args':
      return e.value;
    case 'Button':
      return [{ type: 'integer', value: 1 }];
    case 'Slider':
      return [{ type: 'float', value: e.value as number }];
    case 'Toggle':
      return booleans === 'TF' ? [{ type: e.value === true ? 'true' : 'false' }] : [{ type: 'integer', value: e.value === true ? 1 : 0 }];
    case 'Index':
      return [{ type: 'integer', value: e.value as number }];
    case 'String':
      return [{ type: 'string', value: e.value as string }];
    case 'XYPad':
      return (e.value as number[]).map((value) => ({ type: 'float', value }));
  }
}

/** An argument's value: numbers and strings as they are, T and F as booleans (as OSCQuery's JSON writes them). */
export function argValue(a: OscArg): number | string | boolean {
  return 'value' in a ? a.value : a.type === 'true';
}

/** The OSC type tag string of arguments, without the comma ("ff", "s", "T"). */
export function typeTags(args: readonly OscArg[]): string {
  return args.map((a) => ARG_TAG[a.type]).join('');
}

/** Messages sharing one timetag, in order. */
export interface TimedGroup<M extends OscMessage = OscMessage> {
  timetag: TimeTag;
  entries: M[];
}

/**
 * Consecutive entries with the same play-out time (`ts` + playoutDelayMs; 0: immediately) form one
 * group. `ts` is in Redis's clock; `toLocal` turns it into this host's, which its displays share.
 */
export function playoutGroups<E extends OscEntry & { ts: number }>(ds: readonly { entry: E }[], playoutDelayMs: number, toLocal: (ms: number) => number = (ms) => ms): TimedGroup<E>[] {
  const groups: TimedGroup<E>[] = [];
  let lastAt: number | null | undefined;
  for (const d of ds) {
    const at = playoutDelayMs > 0 ? toLocal(d.entry.ts) + playoutDelayMs : null;
    const last = groups[groups.length - 1];
    if (last && at === lastAt) last.entries.push(d.entry);
    else groups.push({ timetag: timetag(at), entries: [d.entry] });
    lastAt = at;
  }
  return groups;
}

const BUNDLE_HEADER = Buffer.from('#bundle\0', 'latin1');

/** Writes "#bundle\0" and the timetag at `at`; returns the offset after them. */
function writeBundleHead(buf: Buffer, at: number, [seconds, fraction]: TimeTag): number {
  BUNDLE_HEADER.copy(buf, at);
  buf.writeUInt32BE(seconds >>> 0, at + 8);
  buf.writeUInt32BE(fraction >>> 0, at + 12);
  return at + 16;
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

/** A group as packed into one datagram: its entries and their message sizes. */
interface Planned {
  timetag: TimeTag;
  entries: OscMessage[];
  sizes: number[];
}

/** The group's messages, each with its size prefix, written at `at`; returns the offset after them. */
function writeElements(buf: Buffer, at: number, g: Planned, booleans: BooleanMode): number {
  for (let i = 0; i < g.entries.length; i++) {
    buf.writeInt32BE(g.sizes[i]!, at);
    at = writeMessage(buf, at + 4, g.entries[i]!, booleans);
  }
  return at;
}

/** The bytes a group's elements take: each message and its size prefix. */
const elementsSize = (g: Planned) => g.sizes.reduce((n, s) => n + 4 + s, 0);

/**
 * Packs timed groups of entries (in order) into datagrams of at most `maxBytes`, each message
 * encoded straight into its datagram's one buffer. A datagram holding one timetag is a flat bundle
 * with it; one holding several is an "immediately" bundle of per-timetag bundles. A single message
 * larger than `maxBytes` travels alone.
 */
export function packDatagrams(groups: readonly TimedGroup[], booleans: BooleanMode, maxBytes: number): Packed {
  const out: Buffer[] = [];
  let bundles = 0;
  let current: Planned[] = [];
  let nestedSize = BUNDLE_HEAD; // the size of `current` sent as a bundle of inner bundles
  const sizeOf = (groupCount: number, nested: number) => (groupCount === 1 ? nested - INNER_BUNDLE : nested);
  const flush = () => {
    if (current.length === 0) return;
    const buf = Buffer.allocUnsafe(sizeOf(current.length, nestedSize));
    if (current.length === 1) {
      writeElements(buf, writeBundleHead(buf, 0, current[0]!.timetag), current[0]!, booleans);
    } else {
      let at = writeBundleHead(buf, 0, IMMEDIATE);
      for (const g of current) {
        buf.writeInt32BE(BUNDLE_HEAD + elementsSize(g), at);
        at = writeElements(buf, writeBundleHead(buf, at + 4, g.timetag), g, booleans);
      }
    }
    out.push(buf);
    bundles += current.length > 1 ? 1 + current.length : 1;
    current = [];
    nestedSize = BUNDLE_HEAD;
  };
  for (const g of groups) {
    for (const e of g.entries) {
      const size = messageSize(e, booleans);
      const tail = current[current.length - 1];
      const joinsTail = tail !== undefined && sameTag(tail.timetag, g.timetag);
      const grown = nestedSize + 4 + size + (joinsTail ? 0 : INNER_BUNDLE);
      if (current.length > 0 && sizeOf(current.length + (joinsTail ? 0 : 1), grown) > maxBytes) {
        flush();
        current.push({ timetag: g.timetag, entries: [e], sizes: [size] });
        nestedSize = BUNDLE_HEAD + INNER_BUNDLE + 4 + size;
      } else {
        if (joinsTail) {
          tail.entries.push(e);
          tail.sizes.push(size);
        } else current.push({ timetag: g.timetag, entries: [e], sizes: [size] });
        nestedSize = grown;
      }
    }
  }
  flush();
  return { datagrams: out, bundles };
}
