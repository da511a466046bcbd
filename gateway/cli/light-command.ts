// `audiencectl light`: the operator plays a look on a layout's light canvas (docs/light.md), as the
// lighting desk and OSC do through the bridge: one entry on the layout's light stream, which every
// gateway sends to the zone's phones lightLeadMs ahead of when they start it.
import type { Command } from 'commander';
import type { LightLook } from '../../schemas/light.js';
import { AppError } from '../errors.js';
import { leaf, run } from './command-kit.js';


interface LightOptions {
  color?: string;
  brightness?: string;
  fade?: string;
  wave?: string;
  strobe?: string;
  off?: boolean;
}

/** A number from a flag, or invalid_argument naming the flag. */
function numberOf(flag: string, text: string): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n)) throw new AppError('invalid_argument', `${flag} must be a number, not ${JSON.stringify(text)}`);
  return n;
}

/** The look the flags describe (the schema checks the ranges). */
export function lookFromOptions(zone: string, o: LightOptions): LightLook {
  if (o.off) {
    if (o.color ?? o.brightness ?? o.fade ?? o.wave ?? o.strobe) throw new AppError('invalid_argument', '--off goes alone: the zone leaves light mode');
    return { zone, off: true };
  }
  if (o.wave !== undefined && o.strobe !== undefined) throw new AppError('invalid_argument', 'one pattern at a time: --wave or --strobe');
  const look: LightLook = { zone };
  if (o.color !== undefined) look.color = o.color.toLowerCase();
  if (o.brightness !== undefined) look.brightness = numberOf('--brightness', o.brightness);
  if (o.fade !== undefined) look.fadeMs = numberOf('--fade', o.fade);
  if (o.wave !== undefined) {
    const [direction, speed, width, ...rest] = o.wave.split(',');
    if (direction === undefined || speed === undefined || rest.length > 0) throw new AppError('invalid_argument', `--wave is <direction>,<speed>[,<width>], not ${JSON.stringify(o.wave)}`);
    look.pattern = { type: 'wave', direction: numberOf('--wave direction', direction), speed: numberOf('--wave speed', speed), ...(width !== undefined && { width: numberOf('--wave width', width) }) };
  }
  if (o.strobe !== undefined) look.pattern = { type: 'strobe', hz: numberOf('--strobe', o.strobe) };
  return look;
}

export function addLightCommand(program: Command): void {
  leaf(program, 'light', "play a look on a layout's light canvas: what the phones of a zone (or * for all) show, from lightLeadMs from now")
    .argument('<layoutId>')
    .argument('<zone>', 'one of the canvas\'s zones, or * for every phone')
    .option('--color <#rrggbb>', 'the colour (default #ffffff)')
    .option('--brightness <0..1>', 'the brightness (default 1)')
    .option('--fade <ms>', 'how long the change takes (default 0)')
    .option('--wave <direction,speed[,width]>', 'a wave across the seats: degrees (0 left to right, 90 front to back), zone widths a second, the lit share (default 0.25)')
    .option('--strobe <hz>', 'a strobe (a phone shows at most 3 flashes a second)')
    .option('--off', 'the zone leaves light mode: its phones show their controls again')
    .action(
      run(async ({ stores, out }, layoutId: string, zone: string, opts: LightOptions) => {
        const look = lookFromOptions(zone, opts);
        const { id, at } = await stores.light.play(layoutId, look);
        out.result({ layoutId, id, at: new Date(at).toISOString(), look }, `layout ${layoutId}: zone ${zone} ${look.off ? 'leaves light mode' : 'lit'} from ${new Date(at).toISOString()} (look ${id})`);
      }),
    );
}
