// The team page's crowd view in real headless Chromium: the live page's aggregated controls with
// their value, n, zones, vote bars and cue, updated live while votes arrive through the gateway and
// a real bridge (in this process, sending to a UDP sink) fires the cue; the Re-arm button; axe-core
// finds nothing to fix. Screenshots go to test-artifacts/admin/.
import { mkdirSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LayoutDefinition } from '../../schemas/types.js';
import { useBridgeWithSink } from '../helpers/bridge.js';
import { DEMO_LAYOUT, postAction, postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { holdNextRead } from '../helpers/held-response.js';
import { useRedis } from '../helpers/redis.js';
import { axeViolations } from '../helpers/axe.js';

const ARTIFACTS = 'test-artifacts/admin';
const PASSWORD = 'stage-door-1234';
const LAYOUT = structuredClone<LayoutDefinition>(DEMO_LAYOUT);
LAYOUT.layoutId = 'crowd-view';
LAYOUT.zones = ['left', 'right'];
for (const c of LAYOUT.pages[0]!.controls) {
  if (c.lid === 2) c.aggregate = { mode: 'mean', windowMs: 60_000 };
  if (c.lid === 4) c.aggregate = { mode: 'votes', windowMs: 60_000, cue: { quorum: 3, share: 0.6, holdMs: 200 } };
}

const redis = useRedis();
let t: TestGateway;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  t = await startTestGateway({ redisUrl: redis.get().server.url, layout: LAYOUT });
  await t.admin.admins.create(t.teamId, 'stage@team.example', PASSWORD);
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
  page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
});
// after the gateway's beforeAll: it reads the gateway's prefix
const bridge = useBridgeWithSink(() => redis.get().server.url, () => ({ prefix: t.config.redisPrefix, layoutId: LAYOUT.layoutId }));
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

async function signIn(p: Page): Promise<void> {
  await p.goto(`${t.url}/admin/`);
  await p.getByLabel('Email').fill('stage@team.example');
  await p.getByLabel('Password').fill(PASSWORD);
  await p.getByLabel('Password').press('Enter');
  await expect.poll(() => p.getByRole('heading', { name: 'The crowd on the live page' }).isVisible()).toBe(true);
}

async function vote(zone: string, option: number): Promise<void> {
  const token = (await postJson(`${t.url}/token`, { layoutId: LAYOUT.layoutId, zone }, { 'x-api-key': t.apiKey })).body.token as string;
  expect((await postAction(t, token, { layoutId: LAYOUT.layoutId, lid: 4, type: 'Index', value: option })).status).toBe(200);
  expect((await postAction(t, token, { layoutId: LAYOUT.layoutId, lid: 2, type: 'Slider', value: zone === 'left' ? 0.2 : 0.8 })).status).toBe(200);
}

const card = (lid: number) => page.locator(`[data-crowd="${LAYOUT.layoutId}"] [data-lid="${lid}"]`);
const field = (lid: number, name: string) => card(lid).locator(`[data-field="${name}"]`).textContent();

describe('the crowd view', () => {
  it('shows each aggregated control of the live page, armed and empty, before anyone acts', async () => {
    await signIn(page);
    await expect.poll(() => card(4).isVisible()).toBe(true);
    expect(await field(2, 'value')).toBe('no one yet');
    expect(await field(4, 'cue')).toBe('armed');
    expect(await card(4).getByRole('button', { name: 'Re-arm the cue of Colour' }).isVisible()).toBe(true);
  });

  it('updates value, n, zones and vote bars live while the crowd votes, and shows the cue fired with its time', async () => {
    await vote('left', 1);
    await vote('left', 1);
    await vote('right', 2);
    await vote('right', 1);
    // no reload: the page polls a few times a second, and each control's summary comes with its own
    // crowd tick, so each field is waited for on its own
    await expect.poll(() => field(4, 'value')).toBe('Red 0, Green 3, Blue 1');
    await expect.poll(() => field(4, 'n')).toBe('4');
    await expect.poll(() => field(4, 'zones')).toBe('Zones: left Red 0, Green 2, Blue 0 (2) · right Red 0, Green 1, Blue 1 (2)');
    await expect.poll(() => field(2, 'value')).toBe('0.50');
    await expect.poll(() => field(2, 'zones')).toBe('Zones: left 0.20 (2) · right 0.80 (2)');
    await expect.poll(() => card(4).locator('meter').evaluateAll((ms) => ms.map((m) => Number(m.getAttribute('value'))))).toEqual([0, 0.75, 0.25]);
    await expect.poll(() => field(4, 'cue')).toMatch(/^fired 1 at /);
    expect(bridge.sink.messages.filter((m) => m.address === '/004/cue').map((m) => m.args[0]!.value)).toEqual([1]);
    await page.screenshot({ path: `${ARTIFACTS}/crowd-view.png`, fullPage: true });
  });

  it('re-arms a cue with its button: it fires again while the crowd still agrees', async () => {
    await card(4).getByRole('button', { name: 'Re-arm the cue of Colour' }).click();
    await expect.poll(() => page.locator('#status').textContent()).toContain('is armed again');
    await expect.poll(() => bridge.sink.messages.filter((m) => m.address === '/004/cue').length).toBe(2);
    await expect.poll(() => field(4, 'cue')).toMatch(/^fired 1 at /);
  });

  it('a read answered after a newer one is not shown: the counts never go back', async () => {
    await expect.poll(() => field(4, 'n')).toBe('4');
    // the page's next poll reads the crowd now (4 counted) and is answered only after the re-arm's
    // own read has shown the crowd with a fifth vote; the poll waits for it meanwhile
    const held = await holdNextRead(page, `**/admin/api/layouts/${LAYOUT.layoutId}/crowd`);
    await held.read;
    await vote('left', 1);
    // page.request shares the page's session and not its routes
    await expect.poll(async () => ((await (await page.request.get(`${t.url}/admin/api/layouts/${LAYOUT.layoutId}/crowd`)).json()) as { controls: { lid: number; n: number }[] }).controls.find((c) => c.lid === 4)?.n).toBe(5);
    // every count the page shows from here on (the test's TypeScript has no DOM types: a string)
    await page.evaluate(`(() => {
      window.countsShown = [];
      const box = document.querySelector('[data-crowd="${LAYOUT.layoutId}"] .crowd-controls');
      new MutationObserver(() => window.countsShown.push(box.querySelector('[data-lid="4"] [data-field="n"]')?.textContent)).observe(box, { childList: true, subtree: true, characterData: true });
    })()`);
    await card(4).getByRole('button', { name: 'Re-arm the cue of Colour' }).click();
    await expect.poll(() => field(4, 'n')).toBe('5');
    held.release();
    await held.answered;
    // a read asked for after the late one has been answered and shown
    await page.waitForResponse((r) => r.url().endsWith(`/layouts/${LAYOUT.layoutId}/crowd`));
    await expect.poll(() => field(4, 'n')).toBe('5');
    const shown = await page.evaluate<string[]>('window.countsShown');
    expect(shown).toContain('5');
    expect(shown.slice(shown.indexOf('5'))).not.toContain('4');
    await held.stop();
  });

  it('has nothing for axe-core to report', async () => {
    // axe is injected as a script, which the page's Content-Security-Policy rightly refuses: a
    // second context that bypasses it, signed in on the same gateway
    const context = await browser.newContext({ viewport: { width: 1100, height: 900 }, bypassCSP: true });
    const audit = await context.newPage();
    await signIn(audit);
    await expect.poll(() => audit.locator(`[data-crowd="${LAYOUT.layoutId}"] [data-lid="4"] meter`).count()).toBe(3);
    const violations = await axeViolations(audit);
    expect(violations).toEqual([]);
    await context.close();
  });
});
