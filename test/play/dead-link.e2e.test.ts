// A phone on /play/ notices a dead link: real headless Chromium, a real gateway, and the fault proxy
// between them. A path that goes silent (no FIN, no RST: a NAT rebinding, a handover) is seen
// within 10 s and the page is live again over a new connection; a press made on a path whose
// answers no longer come back is confirmed within 5 s over a new connection and stored once; the
// page says it is offline while the browser is, and is live within 2 s of coming back.
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { actionStreamKey } from '../../schemas/redis-keys.js';
import type { LayoutDefinition } from '../../schemas/types.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { recordFigure } from '../helpers/figures.js';
import { DEMO_LAYOUT, postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';
import { Redis } from 'ioredis';

const LAYOUT: LayoutDefinition = { ...structuredClone(DEMO_LAYOUT), layoutId: 'dead-link-show' };
const PHONE = { width: 390, height: 844 };
const redis = useRedis();
let t: TestGateway;
let browser: Browser;
let admin: Redis;

beforeAll(async () => {
  t = await startTestGateway({ redisUrl: redis.get().server.url, layout: LAYOUT });
  admin = new Redis(redis.get().server.url);
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  admin?.disconnect();
  await t?.close();
});

const token = async () => (await postJson(`${t.url}/token`, { layoutId: t.layoutId }, { 'x-api-key': t.apiKey })).body.token as string;
const stateOf = (page: Page) => page.locator('#state').textContent();

/** A phone on /play/ through its own fault proxy, live; `run` gets both, and both go after. */
async function withPhone(run: (page: Page, proxy: FaultProxy) => Promise<void>): Promise<void> {
  const proxy = new FaultProxy({ targets: () => [t.gw.port] });
  await proxy.start();
  const context = await browser.newContext({ viewport: PHONE, hasTouch: true, isMobile: true });
  const page = await context.newPage();
  try {
    await page.goto(`http://127.0.0.1:${proxy.port}/play/#token=${await token()}`);
    await expect.poll(() => stateOf(page)).toBe('Live');
    await run(page, proxy);
  } finally {
    await context.close();
    await proxy.stop();
  }
}

/** Whether the page has been off "Live" since it was installed, and is "Live" now. */
const watchState = (page: Page) =>
  page.evaluate(`(() => {
    const state = document.getElementById('state');
    window.wentOff = false;
    new MutationObserver(() => state.textContent !== 'Live' && (window.wentOff = true)).observe(state, { childList: true, characterData: true, subtree: true });
  })()`);
const backLive = async (page: Page) => (await page.evaluate<boolean>('window.wentOff')) && (await stateOf(page)) === 'Live';

describe('a phone on a dead link (/play/ in Chromium, through a fault proxy)', () => {
  it('sees a path gone silent within 10 s with no press pending, and is live again over a new connection', async () => {
    await withPhone(async (page, proxy) => {
      await watchState(page);
      const linksBefore = proxy.open;
      const silenced = Date.now();
      proxy.silence();
      await expect.poll(() => backLive(page), { timeout: 12_000, interval: 100 }).toBe(true);
      const elapsed = Date.now() - silenced;
      recordFigure('live_silent_link_back_live_ms', elapsed, 'ms', 'a phone path gone silent (no FIN, no RST) to /play/ live again over a new connection');
      expect(elapsed).toBeLessThanOrEqual(10_000);
      expect(proxy.open).toBeGreaterThan(linksBefore); // a new connection, beside the silent one
    });
  }, 60_000);

  it('confirms a press whose answer no longer comes back within 5 s, over a new connection, and stores it once', async () => {
    await withPhone(async (page, proxy) => {
      const stream = actionStreamKey(t.config.redisPrefix, t.layoutId);
      const from = (await admin.xrevrange(stream, '+', '-', 'COUNT', 1))[0]?.[0] ?? '0-0';
      proxy.silence('down'); // the press reaches the gateway and is stored; its ack is lost
      const pressed = Date.now();
      const label = LAYOUT.pages[0]!.controls.find((c) => c.lid === 1)!.props.label;
      await page.getByRole('button', { name: label, exact: true }).click();
      await expect.poll(() => page.locator('#feedback').textContent(), { timeout: 7000, interval: 50 }).toMatch(/^✓/);
      const elapsed = Date.now() - pressed;
      recordFigure('live_press_on_silent_link_confirmed_ms', elapsed, 'ms', 'a press whose ack was lost on a silent path, confirmed over a new connection');
      expect(elapsed).toBeLessThanOrEqual(5000);
      const entries = (await admin.xrange(stream, `(${from}`, '+')).filter(([, f]) => f.join(' ').includes('"lid":1'));
      expect(entries).toHaveLength(1); // the resend carried the press's idempotency key
    });
  }, 60_000);

  it('says it is offline while the browser is, and is live within 2 s of coming back', async () => {
    await withPhone(async (page) => {
      await page.context().setOffline(true);
      await expect.poll(() => stateOf(page), { timeout: 2000, interval: 50 }).toMatch(/^Offline/);
      await new Promise((r) => setTimeout(r, 15_000));
      expect(await stateOf(page)).toMatch(/^Offline/);
      const back = Date.now();
      await page.context().setOffline(false);
      await expect.poll(() => stateOf(page), { timeout: 3000, interval: 50 }).toBe('Live');
      const elapsed = Date.now() - back;
      recordFigure('live_offline_back_live_ms', elapsed, 'ms', 'the browser back online to /play/ live');
      expect(elapsed).toBeLessThanOrEqual(2000);
    });
  }, 60_000);
});
