// The team management page in real headless Chromium (Debian's, driven by playwright-core):
// what an administrator does during a show. Screenshots of each step go to test-artifacts/admin/.
import { mkdirSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { presenceKey } from '../../schemas/redis-keys.js';
import { DEMO_LAYOUT, eventually, getLayout, mintToken, postAction, postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';

const ARTIFACTS = 'test-artifacts/admin';
const PASSWORD = 'stage-door-1234';
const redis = useRedis();
let t: TestGateway;
let browser: Browser;
let page: Page;
const cspViolations: string[] = [];
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1100, height: 900 };

/** Everything a page load shows in the browser's console, and every request that failed. */
function watchConsole(p: Page): string[] {
  const noise: string[] = [];
  p.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') noise.push(`console ${m.type()}: ${m.text()}`);
  });
  p.on('pageerror', (e) => noise.push(`page error: ${e.message}`));
  p.on('response', (r) => {
    if (r.status() >= 400) noise.push(`${r.status()} ${r.url()}`);
  });
  p.on('requestfailed', (r) => noise.push(`failed ${r.url()}`));
  return noise;
}

/** How many lines an element's text takes on screen. */
const linesOf = (p: Page, selector: string) =>
  p.locator(selector).first().evaluate((node) => {
    const tops = new Set([...node.getClientRects()].map((r) => Math.round(r.top)));
    return tops.size;
  });

const shot = (name: string) => page.screenshot({ path: `${ARTIFACTS}/${name}.png`, fullPage: true });

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  t = await startTestGateway({ redisUrl: redis.get().server.url });
  await t.admin.admins.create(t.teamId, 'stage@team.example', PASSWORD);
  const crowd = structuredClone(DEMO_LAYOUT) as unknown as { layoutId: string; name: string; pages: { name: string; controls: Record<string, unknown>[] }[] };
  crowd.layoutId = 'crowd-page';
  crowd.name = 'Crowd show';
  for (const p of crowd.pages) p.name = `Crowd ${p.name}`;
  const modes = [{ mode: 'rate' }, { mode: 'trimmed-mean', windowMs: 500 }, { mode: 'fraction' }, { mode: 'votes', windowMs: 10_000 }, null, { mode: 'centroid' }];
  crowd.pages[0]!.controls.forEach((c, i) => modes[i] && (c.aggregate = modes[i]));
  await t.admin.layouts.import(t.teamId, crowd);
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  page = await browser.newPage({ viewport: DESKTOP });
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) cspViolations.push(m.text());
  });
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe('the signed-out page', () => {
  for (const [name, viewport] of [['desktop', DESKTOP], ['phone', PHONE]] as const) {
    it(`shows the sign-in form and nothing a signed-out person cannot use (${name})`, async () => {
      const context = await browser.newContext({ viewport });
      const fresh = await context.newPage();
      try {
        await fresh.goto(`${t.url}/admin/`);
        await expect.poll(() => fresh.getByLabel('Email').isVisible()).toBe(true);
        expect(await fresh.getByRole('button', { name: 'Sign in' }).isVisible()).toBe(true);
        expect(await fresh.getByRole('button', { name: 'Sign out' }).isVisible()).toBe(false);
        expect(await fresh.locator('#who').isVisible()).toBe(false);
        expect(await fresh.getByRole('heading', { name: 'API keys' }).isVisible()).toBe(false);
        expect(await fresh.getByRole('heading', { name: 'Layouts' }).isVisible()).toBe(false);
        await fresh.screenshot({ path: `${ARTIFACTS}/signed-out-${name}.png`, fullPage: true });
      } finally {
        await context.close();
      }
    });
  }

  it('a clean load logs nothing to the console: no missing favicon, no 401 from the session probe', async () => {
    const context = await browser.newContext({ viewport: DESKTOP });
    const fresh = await context.newPage();
    const noise = watchConsole(fresh);
    try {
      await fresh.goto(`${t.url}/admin/`, { waitUntil: 'networkidle' });
      await expect.poll(() => fresh.getByLabel('Email').isVisible()).toBe(true);
      await fresh.waitForTimeout(300); // a favicon request comes after the load
      expect(noise).toEqual([]);
    } finally {
      await context.close();
    }
  });
});

describe('team management page', () => {
  let apiKey = '';
  let keyId = '';

  it('signs in with the keyboard alone', async () => {
    await page.goto(`${t.url}/admin/`);
    await expect.poll(() => page.getByLabel('Email').isVisible()).toBe(true);
    await shot('01-sign-in');
    await page.getByLabel('Email').focus();
    await page.keyboard.type('stage@team.example');
    await page.keyboard.press('Tab');
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press('Enter');
    await expect.poll(() => page.getByRole('heading', { name: 'API keys' }).isVisible()).toBe(true);
    expect(await page.locator('#who-text').textContent()).toBe('stage@team.example · Test team');
    expect(await page.getByRole('button', { name: 'Sign out' }).isVisible()).toBe(true);
    expect(await page.locator('#signin').isVisible()).toBe(false);
    await shot('02-signed-in');
  });

  it('creates a key and shows its full secret once, with a plain warning', async () => {
    await page.getByLabel('Name').fill('ticketing backend');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = page.locator('#secret-value');
    await expect.poll(() => secret.isVisible()).toBe(true);
    apiKey = await secret.inputValue();
    expect(apiKey).toMatch(/^ak_[0-9a-f]{16}\.[A-Za-z0-9_-]{43}$/);
    keyId = apiKey.split('.')[0]!;
    expect(await page.locator('#secret .warning').textContent()).toContain('only time it is shown');
    expect(await page.getByRole('button', { name: 'Copy' }).isVisible()).toBe(true);
    await shot('03-secret-shown-once');
    expect(await page.locator(`tr[data-key-id="${keyId}"]`).textContent()).toContain('active');
  });

  it('keeps each key id on one line, on a desktop and on a phone', async () => {
    for (const viewport of [DESKTOP, PHONE]) {
      await page.setViewportSize(viewport);
      expect(await linesOf(page, `tr[data-key-id="${keyId}"] code`), `at ${viewport.width}px`).toBe(1);
    }
    await page.setViewportSize(DESKTOP);
  });

  it('the key works against GET /layout', async () => {
    expect((await getLayout(t, t.layoutId, apiKey)).status).toBe(200);
  });

  it('the secret is gone on reload; the table never shows it', async () => {
    await page.reload();
    await expect.poll(() => page.locator(`tr[data-key-id="${keyId}"]`).isVisible()).toBe(true);
    expect(await page.locator('#secret').isHidden()).toBe(true);
    expect(await page.locator('#secret-value').inputValue()).toBe('');
    expect(await page.content()).not.toContain(apiKey.split('.')[1]);
  });

  it('revokes with a confirmation that warns about in-flight requests; GET /layout then answers 401', async () => {
    await page.locator(`tr[data-key-id="${keyId}"]`).getByRole('button', { name: /Revoke key/ }).click();
    const dialog = page.locator('#revoke-dialog');
    await expect.poll(() => dialog.isVisible()).toBe(true);
    expect(await dialog.textContent()).toContain('including those already in flight');
    await shot('04-revoke-confirmation');
    await dialog.getByRole('button', { name: 'Revoke key' }).click();
    await expect.poll(() => page.locator(`tr[data-key-id="${keyId}"]`).textContent()).toContain('revoked');
    await shot('05-revoked');
    const r = await getLayout(t, t.layoutId, apiKey);
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('api_key_revoked');
  });

  it("shows each page's controls (label, type, address, options) and marks the active page", async () => {
    const card = page.locator(`[data-layout-id="${t.layoutId}"]`);
    const main = card.locator('[data-page="main"]');
    const encore = card.locator('[data-page="encore"]');
    expect(await main.isVisible()).toBe(true);
    expect(await encore.isVisible()).toBe(true);
    expect(await main.getByText('Live now', { exact: true }).isVisible()).toBe(true);
    expect(await encore.getByText('Live now', { exact: true }).count()).toBe(0);
    type Cells = { querySelectorAll(selector: 'td'): ArrayLike<{ textContent: string | null }> };
    const rows = await main.locator('tbody tr').evaluateAll((trs: Cells[]) => trs.map((tr) => Array.from(tr.querySelectorAll('td'), (td) => td.textContent?.trim() ?? '')));
    expect(rows).toEqual([
      ['Fireworks', 'Button', '/001', '', ''],
      ['Brightness', 'Slider', '/002', '', ''],
      ['Strobe', 'Toggle', '/003', '', ''],
      ['Colour', 'Index', '/004', '0 Red, 1 Green, 2 Blue', ''],
      ['Shout-out', 'String', '/005', '', ''],
      ['Spotlight', 'XYPad', '/006', '', ''],
    ]);
    // A layout that declares crowd aggregation says so in the Crowd column, control by control.
    const crowd = page.locator('[data-layout-id="crowd-page"] [data-page="main"]');
    const crowdRows = await crowd.locator('tbody tr').evaluateAll((trs: Cells[]) => trs.map((tr) => Array.from(tr.querySelectorAll('td'), (td) => td.textContent?.trim() ?? '')[4]));
    expect(crowdRows).toEqual([
      'presses per second over 1 s',
      "trimmed mean (10 % off each end) of each participant's latest value over 500 ms",
      "share switched on of each participant's latest value over 10 s", // the default window of a fraction
      "votes per option of each participant's latest value over 10 s",
      '',
      "centroid of each participant's latest value over 5 s", // the default window of a centroid
    ]);
    expect(await encore.locator('tbody tr').count()).toBe(3);
    expect(await encore.getByText('Mirror ball').isVisible()).toBe(true);
    await shot('05b-layout-controls');
  });

  it('switches the active page in one click, and discovery follows', async () => {
    expect((await getLayout(t, t.layoutId, t.apiKey)).body.activePageId).toBe('main');
    await page.getByRole('button', { name: 'Make “Encore” active' }).click();
    await expect.poll(() => page.getByRole('button', { name: 'Encore (active)' }).getAttribute('aria-pressed')).toBe('true');
    await shot('06-page-switched');
    const card = page.locator(`[data-layout-id="${t.layoutId}"]`);
    expect(await card.locator('[data-page="encore"]').getByText('Live now', { exact: true }).isVisible()).toBe(true);
    expect(await card.locator('[data-page="main"]').getByText('Live now', { exact: true }).count()).toBe(0);
    const d = await getLayout(t, t.layoutId, t.apiKey);
    expect(d.body.activePageId).toBe('encore');
    expect(d.body.controls.map((c: { lid: number }) => c.lid)).toEqual([7, 8, 9]);
  });

  it('keeps the displays up to date while open: how many are registered, and how many their bridge reaches', async () => {
    const count = page.locator(`[data-destinations="${t.layoutId}"]`);
    expect(await count.textContent()).toBe('none connected');
    const key = presenceKey(t.config.redisPrefix, t.layoutId);
    await redis.get().client.zadd(key, Date.now() + 60_000, 'test-bridge|10.0.0.9:9000');
    await eventually(async () => (await count.textContent()) === '1 of 1 reachable');
    await redis.get().client.zadd(key, Date.now() + 60_000, 'test-bridge|10.0.0.10:9000|down');
    await eventually(async () => (await count.textContent()) === '1 of 2 reachable');
    await shot('07-destination-count');
  });

  it('ends the show: a confirmed click revokes the layout’s audience tokens, and newly minted ones work', async () => {
    const token = await mintToken(t, t.layoutId, t.apiKey);
    const live = (await getLayout(t, t.layoutId, t.apiKey)).body as { controls: { lid: number; type: string }[] };
    const button = live.controls.find((c) => c.type === 'Button')!;
    const act = (tok = token) => postAction(t, tok, { layoutId: t.layoutId, lid: button.lid, type: 'Button' });
    expect((await act()).status).toBe(200);
    await page.locator(`[data-end-show="${t.layoutId}"]`).click();
    const dialog = page.locator('#end-show-dialog');
    await expect.poll(() => dialog.isVisible()).toBe(true);
    expect(await dialog.textContent()).toContain('stops working within a second');
    await shot('08-end-of-show-confirmation');
    await dialog.getByRole('button', { name: 'Revoke audience tokens' }).click();
    await expect.poll(() => page.locator(`[data-layout-id="${t.layoutId}"] .end-show`).textContent()).toContain('are revoked');
    await eventually(async () => (await act()).status === 401);
    expect((await act()).body.error.code).toBe('token_revoked');
    expect((await act(await mintToken(t, t.layoutId, t.apiKey))).status).toBe(200);
  });

  it('creates a key with its own token minting limit', async () => {
    await page.getByLabel('Name').fill('box office');
    await page.locator('details.mint-limits summary').click();
    await page.getByLabel('Tokens a second').fill('2');
    await page.getByLabel('Tokens at once after a pause').fill('3');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = page.locator('#secret-value');
    await expect.poll(() => secret.isVisible()).toBe(true);
    const created = await secret.inputValue();
    await page.getByRole('button', { name: 'I have stored it' }).click();
    expect(await t.admin.apiKeys.get(created.split('.')[0]!)).toMatchObject({ mintRate: 2, mintBurst: 3 });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await postJson(`${t.url}/token`, { layoutId: t.layoutId }, { 'x-api-key': created })).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
  });

  it('reads well on a phone, and signs out', async () => {
    await shot('signed-in-desktop');
    await page.setViewportSize(PHONE);
    await shot('signed-in-phone');
    expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth + 1')).toBe(true); // no sideways scrolling
    expect(await page.getByRole('button', { name: 'Sign out' }).isVisible()).toBe(true);
    // a poll of the page in flight across the sign-out: held until the logout is answered, so its
    // answer is the 401 of a session that is gone, which must not read as an expired session
    let loggedOut!: () => void;
    const logoutAnswered = new Promise<void>((r) => (loggedOut = r));
    let held = 0;
    await page.route('**/admin/api/layouts/*/crowd', async (route) => {
      held++;
      await logoutAnswered;
      await route.continue();
    });
    await expect.poll(() => held).toBeGreaterThan(0);
    page.on('response', (r) => void (r.url().endsWith('/admin/api/logout') && loggedOut()));
    const refused = page.waitForResponse((r) => r.url().endsWith('/crowd') && r.status() === 401);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await expect.poll(() => page.getByLabel('Email').isVisible()).toBe(true);
    await refused;
    await page.unrouteAll();
    expect(await page.getByRole('button', { name: 'Sign out' }).isVisible()).toBe(false);
    expect(await page.getByRole('heading', { name: 'API keys' }).isVisible()).toBe(false);
    expect(await page.locator('#status').textContent()).toBe('Signed out.');
  });

  it('after signing out, a reload is a clean signed-out load', async () => {
    const noise = watchConsole(page);
    await page.reload({ waitUntil: 'networkidle' });
    await expect.poll(() => page.getByLabel('Email').isVisible()).toBe(true);
    expect(await page.locator('#status').textContent()).toBe('');
    expect(noise).toEqual([]);
  });

  it('ran without a single Content-Security-Policy violation', () => {
    expect(cspViolations).toEqual([]);
  });
});
