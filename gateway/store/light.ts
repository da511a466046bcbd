// A layout's light stream, as the operator plays it (audiencectl light, the team page): a look is
// checked against the layout's canvas and appended (XADD, MAXLEN ~ LIGHT_STREAM_MAXLEN); every
// gateway holding the layout's sockets reads it (live/light-feed.ts) and the phones start it at the
// entry's time plus the canvas's lightLeadMs.
import type { RedisClient } from '../../runtime/redis.js';
import { LIGHT_STREAM_MAXLEN, lookStartsAt, zoneOnCanvas, type LightCanvas, type LightLook } from '../../schemas/light.js';
import { describeFirstError, validateLightLook } from '../../schemas/validators.js';
import { AppError } from '../errors.js';
import type { RedisKeys } from './keys.js';
import type { LayoutStore, StoredLayout } from './layouts.js';

export class LightStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly layouts: LayoutStore,
  ) {}

  /** Plays a look on a layout: its stream entry's id and when the phones start it (ms, Redis's clock). */
  async play(layoutId: string, look: unknown): Promise<{ id: string; at: number }> {
    const layout = await this.layouts.get(layoutId);
    if (!layout) throw new AppError('layout_not_found', `no layout ${JSON.stringify(layoutId)}`);
    const { checked, canvas } = checkLook(layout, look);
    const id = (await this.redis.xadd(this.keys.lightStream(layoutId), 'MAXLEN', '~', LIGHT_STREAM_MAXLEN, '*', 'look', JSON.stringify(checked)))!;
    return { id, at: lookStartsAt(id, canvas) };
  }
}

/** The look and the canvas it plays on, if the layout can play it: valid, and for a zone its canvas lights (or *). */
function checkLook(layout: StoredLayout, look: unknown): { checked: LightLook; canvas: LightCanvas } {
  if (!validateLightLook(look)) throw new AppError('invalid_body', describeFirstError(validateLightLook.errors, 'look'));
  const canvas = layout.light;
  if (!canvas) throw new AppError('light_canvas_missing', `layout ${JSON.stringify(layout.layoutId)} declares no light canvas`);
  if (!zoneOnCanvas(canvas, look.zone)) {
    throw new AppError('zone_not_found', `the light canvas of layout ${JSON.stringify(layout.layoutId)} lights ${canvas.zones.length === 0 ? 'no zones, only * (every phone)' : `the zones ${canvas.zones.join(', ')} and * (every zone)`}, not ${JSON.stringify(look.zone)}`);
  }
  return { checked: look, canvas };
}
