// The audience page in light mode, in real headless Chromium with real processes: liblo's oscsend
// sends /light/left to a real bridge's light OSC port, the bridge appends the look under its own
// Redis user, a real gateway sends it, and the left zone's pages fill their screens with it (and
// hold a screen wake lock) while the right zone's page shows its controls; /light/left/off hands
// the screens back. Safety, read from the colours the page actually shows on every animation frame:
// a strobe asked at 10 Hz flashes at most 3 times in any second (the clamp counted), and with
// prefers-reduced-motion not at all.
import { execFile } from 'node:child_process';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LayoutDefinition } from '../../schemas/types.js';
import type { GatewayProcess } from '../helpers/gateway-process.js';
import { DEMO_LAYOUT, postJson } from '../helpers/gateway.js';
import { startLightShow, type LightShow } from '../helpers/light-show.js';
import { useRedis } from '../helpers/redis.js';

const LAYOUT = 'lit-page';
const CANVAS: LayoutDefinition = { ...DEMO_LAYOUT, layoutId: LAYOUT, zones: ['left', 'right'], light: {} };
const PHONE = { width: 390, height: 844 };
const redis = useRedis();
let show: LightShow;
let gateway: GatewayProcess;
let apiKey = '';
let oscPort = 0;
let browser: Browser;
const contexts: BrowserContext[] = [];
const noise: string[] = [];

beforeAll(async () => {
  show = await startLightShow(redis.get().server.url, CANVAS, { bridgeLayout: { lightOscPort: 0 } });
  ({ gateway, apiKey, lightOscPort: oscPort } = show);
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
}, 60_000);
afterAll(async () => {
  for (const c of contexts) await c.close();
  await browser?.close();
  await show?.stop();
});

/** A phone's audience page in zone `zone`, live. */
async function phone(zone: string, reducedMotion: 'reduce' | 'no-preference' = 'no-preference'): Promise<Page> {
  const context = await browser.newContext({ viewport: PHONE, hasTouch: true, isMobile: true, reducedMotion });
  contexts.push(context);
  await context.grantPermissions(['screen-wake-lock'], { origin: gateway.url }).catch(() => {});
  const page = await context.newPage();
  page.on('pageerror', (e) => noise.push(`page error: ${e.message}`));
  const token = (await postJson(`${gateway.url}/token`, { layoutId: LAYOUT, zone, seat: { x: 0.5, y: 0.5 } }, { 'x-api-key': apiKey })).body.token as string;
  await page.goto(`${gateway.url}/play/#token=${token}`);
  await expect.poll(() => page.locator('#state').textContent(), { timeout: 10_000 }).toBe('Live');
  return page;
}
const oscsend = (...args: string[]) =>
  new Promise<void>((resolve, reject) => execFile('oscsend', ['127.0.0.1', String(oscPort), ...args], (e) => (e ? reject(new Error(`oscsend ${args.join(' ')}: ${e.message}`)) : resolve())));
// (in the page: strings, as the tests' TypeScript has no DOM)
const overlay = (p: Page) => p.evaluate<{ lit: boolean; color: string }>("({ lit: !document.getElementById('light').hidden, color: getComputedStyle(document.getElementById('light')).backgroundColor })");
const lightLog = (p: Page) => p.evaluate<{ clamped: number; wakeLock: string; lit: boolean }>('window.audienceLight');

/** The overlay's colour on every animation frame for `ms`, as the page shows it. */
function shownColours(p: Page, ms: number): Promise<{ t: number; rgb: number[] }[]> {
  return p.evaluate<{ t: number; rgb: number[] }[]>(`new Promise((resolve) => {
    const el = document.getElementById('light');
    const out = [];
    const start = performance.now();
    const frame = (t) => {
      out.push({ t, rgb: (getComputedStyle(el).backgroundColor.match(/\\d+/g) ?? []).slice(0, 3).map(Number) });
      if (t - start < ${ms}) requestAnimationFrame(frame);
      else resolve(out);
    };
    requestAnimationFrame(frame);
  })`);
}

/** WCAG relative luminance of an sRGB colour, and the flashes in a run of them: a rise by 0.1 after a fall by as much. */
const luminance = ([r = 0, g = 0, b = 0]: number[]) => {
  const lin = (c: number) => (c / 255 <= 0.04045 ? c / 255 / 12.92 : ((c / 255 + 0.055) / 1.055) ** 2.4);
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
};
function flashStarts(run: { t: number; rgb: number[] }[]): number[] {
  const starts: number[] = [];
  let falling = true;
  let extreme = luminance(run[0]?.rgb ?? []);
  for (const { t, rgb } of run) {
    const l = luminance(rgb);
    if (falling) {
      if (l >= extreme + 0.1) [starts[starts.length], falling, extreme] = [t, false, l];
      else extreme = Math.min(extreme, l);
    } else if (l > extreme) extreme = l;
    else if (l <= extreme - 0.1) [falling, extreme] = [true, l];
  }
  return starts;
}
const mostInOneSecond = (s: number[]) => Math.max(0, ...s.map((t) => s.filter((u) => u >= t && u < t + 1000).length));

describe('the audience page in light mode', () => {
  it("oscsend /light/left fills the left zone's screens with the look and keeps them awake, the right zone's shows its controls; off hands the screens back", async () => {
    const [left1, left2, right] = [await phone('left'), await phone('left'), await phone('right')];
    await oscsend('/light/left', 'sf', '#FF0000', '1');
    for (const p of [left1, left2]) await expect.poll(() => overlay(p), { timeout: 5000 }).toEqual({ lit: true, color: 'rgb(255, 0, 0)' });
    expect(await overlay(right)).toMatchObject({ lit: false });
    expect(await right.locator('#controls').isVisible()).toBe(true);
    expect((await lightLog(left1)).wakeLock).toBe('held');
    await oscsend('/light/left/off');
    for (const p of [left1, left2]) await expect.poll(() => overlay(p), { timeout: 5000 }).toMatchObject({ lit: false });
    expect(await left1.locator('#controls').isVisible()).toBe(true);
    await expect.poll(async () => (await lightLog(left1)).wakeLock, { timeout: 2000 }).toBe('released');
    expect(noise).toEqual([]);
  });

  it('a strobe asked at 10 Hz flashes at most 3 times in any second, the clamp counted; with reduced motion, not at all', async () => {
    const [fast, calm] = [await phone('left'), await phone('left', 'reduce')];
    await oscsend('/light/left/strobe', 'sf', '#ffffff', '10');
    for (const p of [fast, calm]) await expect.poll(async () => (await overlay(p)).lit, { timeout: 5000 }).toBe(true);
    await new Promise((r) => setTimeout(r, 1500)); // the reduced-motion page fades in over a second
    const [run, still] = await Promise.all([shownColours(fast, 3000), shownColours(calm, 3000)]);
    expect(run.length).toBeGreaterThan(60);
    const flashes = flashStarts(run);
    expect(flashes.length, 'the strobe shows').toBeGreaterThanOrEqual(5);
    expect(mostInOneSecond(flashes)).toBeLessThanOrEqual(3);
    expect((await lightLog(fast)).clamped).toBeGreaterThan(0);
    expect(flashStarts(still)).toEqual([]);
    expect(new Set(still.map((f) => f.rgb.join(','))).size).toBe(1);
    await oscsend('/light/off');
  });
});
