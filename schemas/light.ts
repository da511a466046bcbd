// A layout's light canvas and the looks its phones show: the one meaning of light-look.schema.json
// and of a layout's `light` (layout-definition.schema.json) for every program that speaks them:
// the gateway fans looks out, audiencectl plays them, the client shows them. Dependency-free and
// browser-safe.

/** A look for every phone of the layout (each zone's look is replaced). */
export const EVERY_ZONE = '*';
/** How far ahead of a look's start the gateways send it, unless the canvas says (ms). */
export const DEFAULT_LIGHT_LEAD_MS = 150;
/** The light stream keeps about this many looks (XADD MAXLEN ~): enough to find each zone's current one. */
export const LIGHT_STREAM_MAXLEN = 1000;

export interface WavePattern {
  type: 'wave';
  /** degrees: 0 toward x = 1, 90 toward y = 1 */
  direction: number;
  /** zone widths a second */
  speed: number;
  /** the lit band's share of the zone (default 0.25) */
  width?: number;
}

export interface StrobePattern {
  type: 'strobe';
  /** flashes a second as asked (a phone shows at most MAX_FLASHES_PER_SECOND) */
  hz: number;
}

/** What a zone's phones show (light-look.schema.json). */
export interface LightLook {
  zone: string;
  /** the zone leaves light mode */
  off?: true;
  /** #rrggbb (default #ffffff) */
  color?: string;
  /** 0 to 1 (default 1) */
  brightness?: number;
  /** ms from the previous look (default 0) */
  fadeMs?: number;
  pattern?: WavePattern | StrobePattern;
}

/** Where a desk plays the canvas over sACN: a universe and the first fixture's first channel. */
export interface DmxPatch {
  universe: number;
  /** 1 to 512 (default 1) */
  address?: number;
}

/** A layout's light canvas as its definition declares it (`light`). */
export interface LightCanvasDefinition {
  lightLeadMs?: number;
  zones?: string[];
  dmx?: DmxPatch;
}

/** A canvas with its defaults filled in. */
export interface LightCanvas {
  lightLeadMs: number;
  /** the zones it lights; empty: only every phone at once (zone *) */
  zones: readonly string[];
  /** the desk's patch; null: no desk input */
  dmx: Required<DmxPatch> | null;
}

/** Channels of one crowd fixture: dimmer, red, green, blue, strobe, pattern (docs/light.md). */
export const DMX_FIXTURE_CHANNELS = 6;
/** Channels of a DMX universe. */
export const DMX_UNIVERSE_CHANNELS = 512;

/** The canvas of a layout with `light` (and its `zones`), its defaults filled in. */
export function lightCanvas(light: LightCanvasDefinition, layoutZones: readonly string[]): LightCanvas {
  return {
    lightLeadMs: light.lightLeadMs ?? DEFAULT_LIGHT_LEAD_MS,
    zones: light.zones ?? layoutZones,
    dmx: light.dmx ? { universe: light.dmx.universe, address: light.dmx.address ?? 1 } : null,
  };
}

/** The fixtures a desk patches for a canvas: one per zone in its order (zone * when it has none), each at its first channel (1-based). */
export function dmxFixtures(canvas: LightCanvas): { zone: string; address: number }[] {
  if (!canvas.dmx) return [];
  const zones = canvas.zones.length > 0 ? canvas.zones : [EVERY_ZONE];
  return zones.map((zone, i) => ({ zone, address: canvas.dmx!.address + i * DMX_FIXTURE_CHANNELS }));
}

/** What is wrong with a canvas beside the schema (its zones must be the layout's; its fixtures must fit the universe), or null. */
export function canvasProblem(light: LightCanvasDefinition, layoutZones: readonly string[]): string | null {
  const stray = (light.zones ?? []).filter((z) => !layoutZones.includes(z));
  if (stray.length > 0) return `light.zones ${stray.map((z) => JSON.stringify(z)).join(', ')} ${stray.length === 1 ? 'is not one' : 'are not'} of the layout's zones (${layoutZones.length === 0 ? 'it declares none' : layoutZones.join(', ')})`;
  const fixtures = dmxFixtures(lightCanvas(light, layoutZones));
  const last = fixtures.length > 0 ? fixtures[fixtures.length - 1]!.address + DMX_FIXTURE_CHANNELS - 1 : 0;
  if (last > DMX_UNIVERSE_CHANNELS) return `light.dmx: ${fixtures.length} fixture${fixtures.length === 1 ? '' : 's'} of ${DMX_FIXTURE_CHANNELS} channels from address ${fixtures[0]!.address} end at channel ${last}, past the universe's ${DMX_UNIVERSE_CHANNELS}`;
  return null;
}

/** When the look of a light stream entry starts (ms, Redis's clock): the time Redis took it (its id's first part) plus the canvas's lead. */
export function lookStartsAt(entryId: string, canvas: LightCanvas): number {
  return Number(entryId.slice(0, entryId.indexOf('-'))) + canvas.lightLeadMs;
}

/** Whether a look may be played on a canvas: its zone is one of the canvas's, or *. */
export function zoneOnCanvas(canvas: LightCanvas, zone: string): boolean {
  return zone === EVERY_ZONE || canvas.zones.includes(zone);
}

/** A phone shows at most this many flashes a second, whatever a look asks (WCAG 2.3.1). */
export const MAX_FLASHES_PER_SECOND = 3;
/** Where a phone without a seat claim sits for a wave: the zone's middle. */
export const MIDDLE_SEAT = { x: 0.5, y: 0.5 } as const;

/** A look as a light frame carries it: what it shows and when it starts (ms, the server's clock). */
export interface TimedLook extends LightLook {
  at: number;
}

/** What a phone shows at one moment: a colour and how bright; `clamped` when a strobe asked past the flash limit. */
export interface Shown {
  rgb: [number, number, number];
  brightness: number;
  clamped: boolean;
}

const rgbOf = (color: string | undefined): [number, number, number] => {
  const n = Number.parseInt((color ?? '#ffffff').slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
};
const frac = (x: number) => x - Math.floor(x);

/**
 * What a phone at `seat` shows at `now` (the server's clock) under `look`, coming from `before`
 * (what it showed when the look started; null: nothing lit). Null once the look is off. Before
 * `at` the look has not started: `before` still shows. A fade mixes from `before` over fadeMs; a
 * wave lights a band that travels across the seats; a strobe flashes at most
 * MAX_FLASHES_PER_SECOND; with `reducedMotion` neither moves nor flashes: the look's steady colour.
 */
export function shownAt(look: TimedLook, before: Shown | null, seat: { x: number; y: number } | null, now: number, reducedMotion = false): Shown | null {
  if (now < look.at) return before;
  if (look.off) return null;
  const rgb = rgbOf(look.color);
  let level = look.brightness ?? 1;
  let clamped = false;
  const p = look.pattern;
  const elapsed = (now - look.at) / 1000;
  if (p && !reducedMotion) {
    if (p.type === 'wave') {
      const s = seat ?? MIDDLE_SEAT;
      const rad = (p.direction * Math.PI) / 180;
      const phase = frac(s.x * Math.cos(rad) + s.y * Math.sin(rad) - p.speed * elapsed);
      const half = (p.width ?? 0.25) / 2;
      level *= Math.max(0, 1 - Math.min(phase, 1 - phase) / half);
    } else {
      const hz = Math.min(p.hz, MAX_FLASHES_PER_SECOND);
      clamped = p.hz > MAX_FLASHES_PER_SECOND;
      if (frac(elapsed * hz) >= 0.5) level = 0;
    }
  }
  const fade = look.fadeMs ? Math.min(1, (now - look.at) / look.fadeMs) : 1;
  if (fade >= 1 || !before) return { rgb, brightness: before ? level : level * fade, clamped };
  const mix = (a: number, b: number) => Math.round(a + (b - a) * fade);
  return { rgb: [mix(before.rgb[0], rgb[0]), mix(before.rgb[1], rgb[1]), mix(before.rgb[2], rgb[2])], brightness: before.brightness + (level - before.brightness) * fade, clamped };
}

/** WCAG's general flash threshold: a change of relative luminance this large (of the maximum, 1) counts toward a flash. */
export const FLASH_STEP = 0.1;
/** The guard keeps MAX_FLASHES_PER_SECOND within this long, a second and a margin: a screen shows a change up to a frame late, and a second measured by what it showed must hold no more. */
export const FLASH_WINDOW_MS = 1100;
/** With reduced motion, the screen's luminance changes at most this much a second: a slow fade, never a flash. */
export const REDUCED_MOTION_SLEW_PER_SECOND = 1;

const linear = (c: number) => (c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);

/** The colour a screen shows for `s`: its rgb scaled by its brightness, 0 to 255 each; black for nothing lit. */
export function displayedRgb(s: Shown | null): [number, number, number] {
  if (!s) return [0, 0, 0];
  const b = Math.min(1, Math.max(0, s.brightness));
  return [Math.round(s.rgb[0] * b), Math.round(s.rgb[1] * b), Math.round(s.rgb[2] * b)];
}

/** The relative luminance (WCAG, sRGB) of what a screen shows for `s`: 0 (black) to 1 (white). */
export function luminanceOf(s: Shown | null): number {
  const [r, g, b] = displayedRgb(s);
  return 0.2126 * linear(r / 255) + 0.7152 * linear(g / 255) + 0.0722 * linear(b / 255);
}

/** `s` dimmed to show luminance `target` at most (or, `atLeast`, the least brightness that shows at least it): luminance grows with brightness. */
function atLuminance(s: Shown, target: number, atLeast = false): Shown {
  let lo = 0;
  let hi = s.brightness;
  for (let i = 0; i < 20; i++) {
    const mid = (lo + hi) / 2;
    const l = luminanceOf({ ...s, brightness: mid });
    const fits = atLeast ? l >= target : l <= target;
    if (fits === atLeast) hi = mid;
    else lo = mid;
  }
  return { ...s, brightness: atLeast ? hi : lo };
}

/**
 * What a screen may show, frame after frame, so that it never flashes more than
 * MAX_FLASHES_PER_SECOND times in any second (WCAG 2.3.1), whatever the looks ask and however fast
 * they come: a strobe, and a desk's chase of 44 looks a second alike. A flash is a rise of
 * relative luminance by FLASH_STEP or more after a fall by as much (a fade up is one rise, however
 * long); a rise past the budget is held just below the step, and counted once in `clamped`. With
 * reduced motion the luminance changes at most REDUCED_MOTION_SLEW_PER_SECOND a second: nothing
 * flashes; a change held back that way is counted too.
 */
export class FlashGuard {
  /** changes held back (each counted once, however many frames it lasts) */
  clamped = 0;
  private readonly rises: number[] = [];
  private falling = true;
  /** the lowest luminance shown since the last fall began (falling), or the highest since the last rise */
  private extreme = 0;
  private shownLuminance = 0;
  private lastAt: number | null = null;
  private holding = false;
  private previous: Shown | null = null;

  /** Whether the last frame was held back: the screen is still on its way to what is wanted (draw again). */
  get easing(): boolean {
    return this.holding;
  }

  constructor(readonly reducedMotion = false) {}

  /** What to show at `now` (ms of a steady clock: the device's, not an estimate that may step) for `wanted` (null: nothing lit). */
  show(wanted: Shown | null, now: number): Shown | null {
    const dt = this.lastAt === null ? 0 : Math.max(0, now - this.lastAt);
    this.lastAt = now;
    const want = luminanceOf(wanted);
    let shown = wanted;
    let held = false;
    if (this.reducedMotion) {
      const step = (REDUCED_MOTION_SLEW_PER_SECOND * dt) / 1000;
      if (wanted && want > this.shownLuminance + step) {
        shown = atLuminance(wanted, this.shownLuminance + step);
        held = true;
      } else if (this.previous && want < this.shownLuminance - step) {
        // dimming too fast: what was shown, dimmed as far as the slew allows
        shown = atLuminance(this.previous, this.shownLuminance - step, true);
        held = true;
      }
    } else {
      while (this.rises.length > 0 && now - this.rises[0]! >= FLASH_WINDOW_MS) this.rises.shift();
      if (this.falling && want >= this.extreme + FLASH_STEP) {
        if (this.rises.length < MAX_FLASHES_PER_SECOND) {
          this.rises.push(now);
          this.falling = false;
          this.extreme = want;
        } else if (wanted) {
          shown = atLuminance(wanted, this.extreme + FLASH_STEP * 0.99);
          held = true;
        }
      }
    }
    if (held && !this.holding) this.clamped++;
    this.holding = held;
    const l = luminanceOf(shown);
    this.shownLuminance = l;
    this.previous = shown;
    if (this.falling) this.extreme = Math.min(this.extreme, l);
    else if (l > this.extreme) this.extreme = l;
    else if (l <= this.extreme - FLASH_STEP) {
      this.falling = true;
      this.extreme = l;
    }
    return shown;
  }
}
