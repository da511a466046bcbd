// The reference the bridge's OSC bytes are checked against: osc-min's encoder, given the mapping
// the README documents (Button int 1, Slider float, Toggle int 1/0 or T/F, Index int, String
// string, XYPad two floats, -0 sent as 0). The bridge writes its datagrams itself; these tests
// hold it to what this independent encoder makes of the same messages.
import { toBuffer, type OscArgInput, type OscPacketInput, type TimeTag } from 'osc-min';
import type { BooleanMode, OscMessage } from '../../bridge/osc.js';

const float = (v: number): OscArgInput => ({ type: 'float', value: Object.is(v, -0) ? 0 : v });
const int = (v: number): OscArgInput => ({ type: 'integer', value: v });

/** The OSC message osc-min would be given for an entry, or a routed message (its typed arguments as they are). */
export function oscMinMessage(e: OscMessage, booleans: BooleanMode): { address: string; args: OscArgInput[] } {
  const args: OscArgInput[] = [];
  switch (e.type) {
    case 'Args':
      args.push(...e.value.map((a) => (a.type === 'float' ? float(a.value) : a)));
      break;
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

const bytes = (view: DataView) => Buffer.from(view.buffer, view.byteOffset, view.byteLength);

/** osc-min's bytes for any packet: a message or a bundle. */
export function oscMinPacket(packet: OscPacketInput): Buffer {
  return bytes(toBuffer(packet));
}

/** osc-min's bytes for an entry's (or a routed) message. */
export function oscMinEncode(e: OscMessage, booleans: BooleanMode): Buffer {
  return bytes(toBuffer(oscMinMessage(e, booleans)));
}

/** osc-min's bytes for a bundle of entries' messages, or of inner bundles. */
export function oscMinBundle(timetag: TimeTag, elements: OscPacketInput[]): Buffer {
  return bytes(toBuffer({ timetag, elements }));
}
