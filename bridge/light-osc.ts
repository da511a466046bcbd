// OSC into light looks: what a show computer (QLab, TouchDesigner, Companion) sends to a layout's
// light OSC port, as a look on its light canvas (schemas/light.ts). Pure: no sockets.
//
//   /light[/<zone>]           <#rrggbb> [brightness] [fadeMs]        a steady look
//   /light[/<zone>]/strobe    <#rrggbb> <hz> [brightness]
//   /light[/<zone>]/wave      <#rrggbb> <direction> <speed> [width] [brightness]
//   /light[/<zone>]/off                                               the zone leaves light mode
//
// No zone (or *) is every phone of the layout. Numbers may be OSC ints or floats.
import { EVERY_ZONE, type LightLook } from '../schemas/light.js';
import { describeFirstError, validateLightLook } from '../schemas/validators.js';

/** An OSC message's arguments as osc-min decodes them. */
export type OscInArg = { type: string; value?: unknown };

/** Why an OSC message is no look: a bounded set (a metric's label). */
export type LightRefusal = 'address' | 'arguments' | 'value';

const KINDS = new Set(['strobe', 'wave', 'off']);
const ZONE = /^([A-Za-z0-9_-]{1,64}|\*)$/;

/** The look an OSC message asks for, or why it is none (with words for the log). */
export function lookFromOsc(address: string, args: readonly OscInArg[]): { look: LightLook } | { refused: LightRefusal; why: string } {
  const parts = address.split('/');
  if (parts[0] !== '' || parts[1] !== 'light' || parts.length > 4) return { refused: 'address', why: `${address} is not /light[/<zone>][/strobe|/wave|/off]` };
  let zone = parts[2] ?? EVERY_ZONE;
  let kind = parts[3] ?? 'steady';
  // /light/off, /light/wave, /light/strobe: every zone's (a zone of that name is /light/<name>/...)
  if (parts.length === 3 && KINDS.has(zone)) [zone, kind] = [EVERY_ZONE, zone];
  if (!ZONE.test(zone) || (parts.length === 4 && !KINDS.has(kind))) return { refused: 'address', why: `${address} is not /light[/<zone>][/strobe|/wave|/off]` };
  const numbers: number[] = [];
  let color: string | undefined;
  for (const [i, a] of args.entries()) {
    if (i === 0 && a.type === 'string' && typeof a.value === 'string') color = a.value.toLowerCase();
    else if (a.type === 'integer' && typeof a.value === 'number') numbers.push(a.value);
    // a float32 as it was typed: 0.3, not 0.30000001192092896 (7 significant digits)
    else if ((a.type === 'float' || a.type === 'double') && typeof a.value === 'number') numbers.push(a.type === 'float' ? Number(a.value.toPrecision(7)) : a.value);
    else return { refused: 'arguments', why: `${address}: argument ${i + 1} is ${a.type}; a look takes a colour ("#rrggbb") and numbers` };
  }
  let look: LightLook;
  const [a, b, c, d] = numbers;
  const extra = (n: number) => numbers.length > n;
  if (kind === 'off') {
    if (args.length > 0) return { refused: 'arguments', why: `${address} takes no arguments` };
    look = { zone, off: true };
  } else if (color === undefined) {
    return { refused: 'arguments', why: `${address}: the first argument is the colour, a string "#rrggbb"` };
  } else if (kind === 'steady') {
    if (extra(2)) return { refused: 'arguments', why: `${address} takes <colour> [brightness] [fadeMs]` };
    look = { zone, color, ...(a !== undefined && { brightness: a }), ...(b !== undefined && { fadeMs: Math.round(b) }) };
  } else if (kind === 'strobe') {
    if (a === undefined || extra(2)) return { refused: 'arguments', why: `${address} takes <colour> <hz> [brightness]` };
    look = { zone, color, pattern: { type: 'strobe', hz: a }, ...(b !== undefined && { brightness: b }) };
  } else {
    if (a === undefined || b === undefined || extra(4)) return { refused: 'arguments', why: `${address} takes <colour> <direction> <speed> [width] [brightness]` };
    look = { zone, color, pattern: { type: 'wave', direction: a, speed: b, ...(c !== undefined && { width: c }) }, ...(d !== undefined && { brightness: d }) };
  }
  if (!validateLightLook(look)) return { refused: 'value', why: `${address}: ${describeFirstError(validateLightLook.errors, 'look')}` };
  return { look };
}
