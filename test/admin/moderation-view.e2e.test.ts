// The team page's moderation queue in real headless Chromium, with two operators signed in at
// once: held texts appear on both pages without a reload; the keyboard alone decides (arrows move,
// A approves, R rejects, M mutes); a decision one operator makes shows on the other's page as
// decided, by whom; an approved text reaches the displays (a real bridge, in this process, sending
// to a UDP sink), a rejected one never does; a muted sender is refused. axe-core finds nothing to fix.
import { mkdirSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LayoutDefinition } from '../../schemas/types.js';
import { axeViolations } from '../helpers/axe.js';
import { useBridgeWithSink } from '../helpers/bridge.js';
import { mintToken, postAction, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { holdNextRead } from '../helpers/held-response.js';
import { useRedis } from '../helpers/redis.js';

const ARTIFACTS = 'test-artifacts/admin';
const PASSWORD = 'stage-door-1234';
const LAYOUT: LayoutDefinition = {
  layoutId: 'moderated-wall',
  name: 'Moderated wall',
  activePageId: 'main',
  pages: [{ pageId: 'main', name: 'Main', controls: [{ lid: 5, address: '/005', type: 'String', props: { label: 'Shout-out' }, moderation: { mode: 'hold', maxLength: 140 } }] }],
};

const redis = useRedis();
let t: TestGateway;
let browser: Browser;
const contexts: BrowserContext[] = [];
let one: Page;
let two: Page;

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  t = await startTestGateway({ redisUrl: redis.get().server.url, layout: LAYOUT });
  await t.admin.admins.create(t.teamId, 'one@team.example', PASSWORD);
  await t.admin.admins.create(t.teamId, 'two@team.example', PASSWORD);
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
  one = await operator('one@team.example');
  two = await operator('two@team.example');
});
// after the gateway's beforeAll: it reads the gateway's prefix
const bridge = useBridgeWithSink(() => redis.get().server.url, () => ({ prefix: t.config.redisPrefix, layoutId: LAYOUT.layoutId }));
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

async function operator(email: string, bypassCSP = false): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 }, bypassCSP });
  contexts.push(context);
  const p = await context.newPage();
  await p.goto(`${t.url}/admin/`);
  await p.getByLabel('Email').fill(email);
  await p.getByLabel('Password').fill(PASSWORD);
  await p.getByLabel('Password').press('Enter');
  await p.getByRole('heading', { name: 'Moderation queue' }).waitFor({ timeout: 10_000 });
  return p;
}

const queueOf = (p: Page) => p.getByRole('listbox', { name: 'Moderation queue' });
const texts = (p: Page) => queueOf(p).locator('[data-item] .mod-text').allTextContents();
const selected = (p: Page) => queueOf(p).locator('[aria-selected="true"] .mod-text').textContent();
const decided = (p: Page) => p.locator(`[data-moderation="${LAYOUT.layoutId}"] .mod-decided li`).allTextContents();
const shown = (text: string) => bridge.sink.messages.filter((m) => m.address === '/005' && m.args[0]?.value === text).length;

async function hold(token: string, text: string): Promise<void> {
  const r = await postAction(t, token, { layoutId: LAYOUT.layoutId, lid: 5, type: 'String', value: text });
  expect(r.body).toEqual({ success: true, held: true });
}

describe('the moderation queue on the team page', () => {
  it('shows held texts on every operator\'s page without a reload, oldest first', async () => {
    const fan = await mintToken(t, LAYOUT.layoutId, t.apiKey);
    for (const text of ['Happy birthday Sam!', 'Go team', 'Hello from row 12']) await hold(fan, text);
    for (const p of [one, two]) await expect.poll(() => texts(p)).toEqual(['Happy birthday Sam!', 'Go team', 'Hello from row 12']);
    expect(await selected(one)).toBe('Happy birthday Sam!');
  });

  it('decides from the keyboard alone: arrows move, A approves (it plays), R rejects (it never plays); the other operator sees both decided', async () => {
    await queueOf(one).focus();
    await one.keyboard.press('ArrowDown');
    await expect.poll(() => selected(one)).toBe('Go team');
    await one.keyboard.press('a');
    await expect.poll(() => one.locator('#status').textContent()).toBe('“Go team” approved.');
    await expect.poll(() => shown('Go team')).toBe(1);
    await expect.poll(() => selected(one)).toBe('Hello from row 12');
    await one.keyboard.press('Home');
    await expect.poll(() => selected(one)).toBe('Happy birthday Sam!');
    await one.keyboard.press('r');
    await expect.poll(() => texts(two)).toEqual(['Hello from row 12']);
    const seen = await decided(two);
    expect(seen[0]).toMatch(/^rejected “Happy birthday Sam!” by admin:one@team\.example at /);
    expect(seen[1]).toMatch(/^approved “Go team” by admin:one@team\.example at /);
    await new Promise((r) => setTimeout(r, 300));
    expect(shown('Go team')).toBe(1);
    expect(shown('Happy birthday Sam!')).toBe(0);
  });

  it('a text decided on one page is told as already decided on the other', async () => {
    // the other operator's page does not read the queue again until the end of this test
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    await two.route(`**/admin/api/layouts/${LAYOUT.layoutId}/moderation`, async (route) => {
      await gate;
      await route.continue().catch(() => {}); // a read the page gave up on, or one unrouted while it waited
    });
    const id = await queueOf(two).locator('[data-item]').first().getAttribute('data-item');
    const r = await one.evaluate(async ([layoutId, itemId]) => {
      const session = (await (await fetch('/admin/api/session')).json()) as { csrfToken: string };
      const res = await fetch(`/admin/api/layouts/${layoutId}/moderation/${itemId}/approve`, { method: 'POST', headers: { 'x-csrf-token': session.csrfToken } });
      return res.status;
    }, [LAYOUT.layoutId, id] as const);
    expect(r).toBe(200);
    // the other operator decides the same text before its page's next read: told, nothing changes
    await queueOf(two).focus();
    await two.keyboard.press('r');
    await expect.poll(() => two.locator('#status').textContent()).toBe('“Hello from row 12” was already approved by admin:one@team.example.');
    await expect.poll(() => shown('Hello from row 12')).toBe(1);
    release();
    await two.unroute(`**/admin/api/layouts/${LAYOUT.layoutId}/moderation`);
    await expect.poll(() => texts(two)).toEqual([]);
  });

  it('M mutes the sender: their other held texts go, and their next String is refused', async () => {
    const troll = await mintToken(t, LAYOUT.layoutId, t.apiKey);
    await hold(troll, 'spam one');
    await hold(troll, 'spam two');
    await expect.poll(() => texts(one)).toEqual(['spam one', 'spam two']);
    await queueOf(one).focus();
    await one.keyboard.press('m');
    await expect.poll(() => texts(one)).toEqual([]);
    const refusal = async () => ((await postAction(t, troll, { layoutId: LAYOUT.layoutId, lid: 5, type: 'String', value: 'spam three' })).body as { error?: { code: string } }).error?.code;
    await expect.poll(refusal).toBe('moderated');
    await one.screenshot({ path: `${ARTIFACTS}/moderation-queue.png`, fullPage: true });
  });

  it('a read answered after a newer one is not shown: a decided text never comes back', async () => {
    const fan = await mintToken(t, LAYOUT.layoutId, t.apiKey);
    await hold(fan, 'First!');
    await hold(fan, 'Second!');
    await expect.poll(() => texts(one)).toEqual(['First!', 'Second!']);
    expect(await selected(one)).toBe('First!');
    // the page's next read of the queue is read now (both texts waiting) but answered only after
    // the decision below has been made and shown
    const held = await holdNextRead(one, `**/admin/api/layouts/${LAYOUT.layoutId}/moderation`);
    await held.read;
    // every queue the page shows from here on (the test's TypeScript has no DOM types: a string)
    await one.evaluate(`(() => {
      window.queueShown = [];
      const list = document.querySelector('.mod-queue');
      new MutationObserver(() => window.queueShown.push([...list.querySelectorAll('[data-item] .mod-text')].map((e) => e.textContent))).observe(list, { childList: true, subtree: true });
    })()`);
    await queueOf(one).focus();
    await one.keyboard.press('a');
    await expect.poll(() => one.locator('#status').textContent()).toBe('“First!” approved.');
    await expect.poll(() => texts(one)).toEqual(['Second!']);
    held.release();
    await held.answered;
    // a read asked for after the late one has been answered and shown
    await one.waitForResponse((r) => r.url().endsWith(`/layouts/${LAYOUT.layoutId}/moderation`) && r.request().method() === 'GET');
    await expect.poll(() => texts(one)).toEqual(['Second!']);
    const shownMeanwhile = await one.evaluate<string[][]>('window.queueShown');
    expect(shownMeanwhile.filter((q) => q.includes('First!'))).toEqual([]);
    await held.stop();
    await one.keyboard.press('r');
    await expect.poll(() => texts(one)).toEqual([]);
  });

  it('has nothing for axe-core to report, with texts waiting', async () => {
    const fan = await mintToken(t, LAYOUT.layoutId, t.apiKey);
    await hold(fan, 'Encore!');
    const audit = await operator('two@team.example', true);
    await expect.poll(() => texts(audit)).toEqual(['Encore!']);
    expect(await axeViolations(audit)).toEqual([]);
  });
});
