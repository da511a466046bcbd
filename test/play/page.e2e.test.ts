// The audience page at /play/ in real headless Chromium at phone size (390 x 844): it reads its
// token from the URL fragment, renders every control type of the live page, a slider move reaches
// the displays (an in-process bridge sending to a UDP sink), a page switch re-renders it, the
// crowd's value shows, and axe-core finds nothing to fix. Screenshots go to test-artifacts/play/.
import { mkdirSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LayoutDefinition } from '../../schemas/types.js';
import { useBridgeWithSink } from '../helpers/bridge.js';
import { DEMO_LAYOUT, eventually, postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';
import { axeViolations } from '../helpers/axe.js';
import { FaultProxy } from '../helpers/fault-proxy.js';

const ARTIFACTS = 'test-artifacts/play';
const PHONE = { width: 390, height: 844 };

/** The demo layout (every control type) with the Slider and the Index folded as crowds. */
const LAYOUT = structuredClone<LayoutDefinition>(DEMO_LAYOUT);
LAYOUT.layoutId = 'play-show';
for (const c of LAYOUT.pages[0]!.controls) {
  if (c.lid === 2) c.aggregate = { mode: 'mean', windowMs: 60_000 };
  if (c.lid === 4) c.aggregate = { mode: 'votes', windowMs: 60_000 };
}
LAYOUT.zones = ['left', 'right'];
LAYOUT.limits = { stringsPerSecond: 0.01, stringBurst: 1 }; // a second shout-out is refused: the page says why
/** A token for a phone in the left zone, as a backend that knows the seat mints it. */
const seatToken = async () => (await postJson(`${t.url}/token`, { layoutId: t.layoutId, zone: 'left' }, { 'x-api-key': t.apiKey })).body.token as string;

const redis = useRedis();
let t: TestGateway;
let browser: Browser;
let page: Page;
const noise: string[] = [];

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  t = await startTestGateway({ redisUrl: redis.get().server.url, layout: LAYOUT });
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
  page = await browser.newPage({ viewport: PHONE, hasTouch: true, isMobile: true });
  page.on('console', (m) => (m.type() === 'error' || m.type() === 'warning') && noise.push(`console ${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => noise.push(`page error: ${e.message}`));
  page.on('response', (r) => r.status() >= 400 && noise.push(`${r.status()} ${r.url()}`));
}, 60_000);
// after the gateway's beforeAll, which seeds the data it reads
const display = useBridgeWithSink(
  () => redis.get().server.url,
  () => ({ prefix: t.config.redisPrefix, layoutId: LAYOUT.layoutId }),
);
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe('the audience page (/play/)', () => {
  it('says what to do without a token', async () => {
    await page.goto(`${t.url}/play/`);
    await expect.poll(() => page.locator('#problem').textContent()).toContain('#token=');
  });

  it('renders every control type of the live page at 390 px, from a token in the URL fragment', async () => {
    await page.goto(`${t.url}/play/#token=${await seatToken()}`);
    await expect.poll(() => page.locator('#state').textContent()).toBe('Live');
    await expect.poll(() => page.locator('#title').textContent()).toBe('Main set'); // the page's name, not its id
    const labelOf = (lid: number) => LAYOUT.pages[0]!.controls.find((c) => c.lid === lid)!.props.label;
    expect(await page.getByRole('button', { name: labelOf(1), exact: true }).count()).toBe(1); // Button
    expect(await page.locator('input[type=range]#c2').count()).toBe(1); // Slider
    expect(await page.locator('input[type=checkbox][role=switch]#c3').count()).toBe(1); // Toggle
    expect(await page.locator('input[type=radio][name=c4]').count()).toBe(LAYOUT.pages[0]!.controls.find((c) => c.lid === 4)!.options!.length); // Index
    expect(await page.locator('input[type=text]#c5').count()).toBe(1); // String
    expect(await page.locator('.pad').count()).toBe(1); // XYPad, with its two ranges
    expect(await page.locator('#c6-x, #c6-y').count()).toBe(2);
    // nothing wider than the phone
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(PHONE.width);
    await page.screenshot({ path: `${ARTIFACTS}/main.png`, fullPage: true });
  });

  it('takes the token out of the address bar once read (history.replaceState), and keeps it for a reload of the tab', async () => {
    const token = await seatToken();
    // the tab is on /play/ already: a new fragment is a hashchange, on which the page reloads and
    // reads it (until then, the old document still says Live)
    await page.goto(`${t.url}/play/#token=${token}`);
    await expect.poll(() => page.url()).toBe(`${t.url}/play/`);
    await expect.poll(() => page.locator('#state').textContent()).toBe('Live');
    expect(await page.evaluate('location.hash')).toBe('');
    await page.reload();
    await expect.poll(() => page.locator('#state').textContent()).toBe('Live');
  });

  it('serves its client library and the protocol module it imports to any origin (CORS)', async () => {
    for (const path of ['/play/live-client.js', '/play/socket-like.js', '/schemas/live-protocol.js']) {
      const r = await fetch(`${t.url}${path}`, { headers: { origin: 'https://app.example' } });
      expect([path, r.status, r.headers.get('access-control-allow-origin'), r.headers.get('content-type')]).toEqual([path, 200, '*', 'text/javascript; charset=utf-8']);
    }
  });

  it('confirms each accepted action in words (announced), says why one is refused, and shows the crowd as people read it', async () => {
    await page.locator('#c2').fill('0.8');
    await eventually(() => display.sink.messages.some((m) => m.address === '/002' && Math.abs(Number(m.args[0]!.value) - 0.8) < 1e-6));
    await expect.poll(() => page.locator('#feedback').textContent()).toBe('✓ Brightness: 80 %');
    expect(await page.locator('#feedback').getAttribute('aria-live')).toBe('polite');
    await expect.poll(() => page.locator('#c2-crowd').textContent()).toBe('Crowd: 80 % · 1 personleft: 80 % (1 person)');
    await page.getByRole('button', { name: 'Fireworks', exact: true }).click();
    await expect.poll(() => page.locator('#feedback').textContent()).toBe('✓ Sent: Fireworks');
    await page.screenshot({ path: `${ARTIFACTS}/pressed.png`, fullPage: true });
    await page.locator('#c5').fill('hello from a phone');
    await page.locator('#c5').press('Enter');
    await eventually(() => display.sink.messages.some((m) => m.address === '/005' && m.args[0]!.value === 'hello from a phone'));
    await expect.poll(() => page.locator('#feedback').textContent()).toBe('✓ Sent: “hello from a phone”');
    expect(await page.locator('#c5').inputValue()).toBe('');
    await page.locator('#c5').fill('and again at once');
    await page.locator('#c5').press('Enter');
    await expect.poll(() => page.locator('#problem').textContent()).toMatch(/^Too fast: wait \d+ s and try again\.$/);
    expect(await page.locator('#c5').inputValue()).toBe('and again at once'); // kept, to send again
    // measured once it is on screen: a page frame that came meanwhile redraws the controls
    let pad: { width: number; height: number } | null = null;
    await expect.poll(async () => (pad = await page.locator('.pad').boundingBox())).not.toBeNull();
    await page.locator('.pad').click({ position: { x: pad!.width * 0.25, y: pad!.height * 0.75 } }); // scrolled into view first
    await eventually(() => display.sink.messages.some((m) => m.address === '/006' && Math.abs(Number(m.args[0]!.value) - 0.25) < 0.02 && Math.abs(Number(m.args[1]!.value) - 0.75) < 0.02));
    await page.screenshot({ path: `${ARTIFACTS}/acted.png`, fullPage: true });
  });

  it('keeps what the phone is typing, and where, when the page on screen comes again (a reconnect, the same page made active again)', async () => {
    const shown = await page.locator('#controls').getAttribute('data-version');
    expect(shown).toMatch(/^\d+$/);
    await page.locator('#c5').fill('half a thought');
    await t.admin.layouts.activate(t.layoutId, 'main'); // the active page already: a page frame with the same controls
    await expect.poll(() => page.locator('#controls').getAttribute('data-version')).not.toBe(shown);
    expect(await page.locator('#c5').inputValue()).toBe('half a thought');
    expect(await page.evaluate<string>('document.activeElement?.id')).toBe('c5');
    await page.locator('#c5').fill('');
  });

  it('shows a vote as bars with counts, and keeps the phone\'s own vote visible', async () => {
    await page.locator('input[type=radio][name=c4]').nth(1).check();
    await expect.poll(() => page.locator('#feedback').textContent()).toBe('✓ Voted: Green');
    await expect.poll(() => page.locator('#c4-mine').textContent()).toBe('Your vote: Green');
    await expect.poll(() => page.locator('#c4-crowd').textContent()).toMatch(/Red 0, Green 1, Blue 0 · 1 person/);
    expect(await page.locator('#c4-crowd meter').count()).toBe(3);
    expect(await page.locator('#c4-bar1').getAttribute('value')).toBe('1');
    await page.screenshot({ path: `${ARTIFACTS}/voted.png`, fullPage: true });
  });

  it('follows a page switch: the new page\'s name and controls; back again, the own vote is still shown', async () => {
    await t.admin.layouts.activate(t.layoutId, 'encore');
    await expect.poll(() => page.locator('#title').textContent()).toBe('Encore');
    expect(await page.locator('#c2').count()).toBe(0);
    expect(await page.locator('#c8').count()).toBe(1);
    await page.screenshot({ path: `${ARTIFACTS}/switched.png`, fullPage: true });
    await t.admin.layouts.activate(t.layoutId, 'main');
    await expect.poll(() => page.locator('#title').textContent()).toBe('Main set');
    expect(await page.locator('#c4-mine').textContent()).toBe('Your vote: Green');
    expect(await page.locator('input[type=radio][name=c4]').nth(1).isChecked()).toBe(true);
  });

  it('says what is wrong when it is not live: a gateway restarting (with the next attempt), then live again; access ended', async () => {
    // behind a balancer (the tests' TCP proxy), as in production: the restarted gateway is reached at the same address
    await page.goto('about:blank'); // the other phone leaves first: it would only log its reconnects to a gateway that is gone
    let target = t.gw.port;
    const balancer = new FaultProxy({ targets: () => [target] });
    await balancer.start();
    const phone = await browser.newPage({ viewport: PHONE, hasTouch: true, isMobile: true });
    try {
      await phone.goto(`http://127.0.0.1:${balancer.port}/play/#token=${await seatToken()}`);
      await expect.poll(() => phone.locator('#state').textContent()).toBe('Live');
      const previous = t;
      await previous.close();
      await expect.poll(() => phone.locator('#state').textContent()).toBe("The show's server is restarting: reconnecting.");
      await expect.poll(() => phone.locator('#next').textContent()).toMatch(/^(Next try in \d+ s|Trying now)$/);
      await phone.screenshot({ path: `${ARTIFACTS}/restarting.png`, fullPage: true });
      t = await startTestGateway({ redisUrl: redis.get().server.url, sameDataAs: previous });
      target = t.gw.port;
      // read together: a socket uWS drops right after its upgrade (uNetworking/uWebSockets#1928)
      // takes the page off live again for a moment, with its next attempt beside it
      await expect.poll(() => Promise.all([phone.locator('#state').textContent(), phone.locator('#next').textContent()]), { timeout: 40_000 }).toEqual(['Live', '']);
      await phone.screenshot({ path: `${ARTIFACTS}/back.png`, fullPage: true });
      await t.admin.layouts.revokeTokens(t.layoutId, { before: Date.now() + 1 }); // the end of the show for every phone: 4001, and this page has no renewal
      await expect.poll(() => phone.locator('#state').textContent()).toBe('Your access has ended. Ask for a new link.');
      await phone.screenshot({ path: `${ARTIFACTS}/ended.png`, fullPage: true });
    } finally {
      await phone.close();
      await balancer.stop();
    }
  }, 60_000);

  it('has nothing for axe-core to report, and nothing in the console', async () => {
    // axe is injected as a script, which the page's Content-Security-Policy rightly refuses: a
    // second context that bypasses it, on the same page and state
    const context = await browser.newContext({ viewport: PHONE, bypassCSP: true, hasTouch: true, isMobile: true });
    const audit = await context.newPage();
    await audit.goto(`${t.url}/play/#token=${await seatToken()}`);
    await expect.poll(() => audit.locator('#title').textContent()).toBe('Main set');
    await audit.locator('#c2').fill('0.6');
    await audit.locator('input[type=radio][name=c4]').nth(2).check();
    await expect.poll(() => audit.locator('#c2-crowd').textContent()).toContain('Crowd'); // crowd values shown too
    await expect.poll(() => audit.locator('#c4-mine').textContent()).toBe('Your vote: Blue'); // and the vote bars and the own vote
    const violations = await axeViolations(audit);
    expect(violations).toEqual([]);
    await context.close();
    expect(noise).toEqual([]);
  });
});
