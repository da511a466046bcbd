// The team page's light panel in real headless Chromium: an operator plays a look on the left zone
// and the left zone's phones (the client library over real sockets) get it, the right zone's do
// not; Off hands their screens back. The phones report their clock uncertainty on their time
// exchanges: the gateway's histogram per layout and zone counts each report, and the sync panel
// shows, per zone, within how many ms 95 % of the phones are (from reports of uncertainties the test
// picks, as loopback under load has no fixed round trip). axe-core finds nothing to fix.
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { LiveClient, type Light } from '../../client/live-client.js';
import type { LayoutDefinition } from '../../schemas/types.js';
import { axeViolations } from '../helpers/axe.js';
import { DEMO_LAYOUT, eventually, postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { connectLive, liveUrl } from '../helpers/live.js';
import { sample } from '../helpers/metrics.js';
import { useRedis } from '../helpers/redis.js';

const PASSWORD = 'lighting-desk-1234';
const LAYOUT: LayoutDefinition = { ...DEMO_LAYOUT, layoutId: 'lit-wall', name: 'Lit wall', zones: ['left', 'right'], light: { lightLeadMs: 100 } };
const redis = useRedis();
let t: TestGateway;
let browser: Browser;
let page: Page;
const phones: LiveClient[] = [];

beforeAll(async () => {
  t = await startTestGateway({ redisUrl: redis.get().server.url, layout: LAYOUT });
  await t.admin.admins.create(t.teamId, 'lights@team.example', PASSWORD);
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
  page = await (await browser.newContext({ viewport: { width: 1100, height: 900 }, bypassCSP: true })).newPage(); // axe-core is injected as a script
  await page.goto(`${t.url}/admin/`);
  await page.getByLabel('Email').fill('lights@team.example');
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByLabel('Password').press('Enter');
  await page.getByRole('heading', { name: 'Light', exact: true }).waitFor({ timeout: 10_000 });
}, 60_000);
afterAll(async () => {
  for (const p of phones) p.stop();
  await browser?.close();
  await t?.close();
});

async function phone(zone: string, seat?: { x: number; y: number }): Promise<{ live: LiveClient; looks: Light[] }> {
  const token = (await postJson(`${t.url}/token`, { layoutId: LAYOUT.layoutId, zone, ...(seat && { seat }) }, { 'x-api-key': t.apiKey })).body.token as string;
  const live = new LiveClient({ url: liveUrl(t.url), token, WebSocket });
  phones.push(live);
  const looks: Light[] = [];
  live.on('light', (l) => looks.push(l));
  await eventually(() => live.state === 'open' && live.page !== null, 5000);
  return { live, looks };
}
const panel = () => page.locator(`[data-light="${LAYOUT.layoutId}"]`);

describe("the team page's light panel", () => {
  it('plays a look on one zone: its phones get it from the lead on, the other zone\'s do not; Off hands the screens back', async () => {
    const [left, right] = [await phone('left', { x: 0.25, y: 0.75 }), await phone('right')];
    expect(left.live.seat).toEqual({ x: 0.25, y: 0.75 });
    expect(right.live.seat).toBeNull();
    await panel().getByLabel('Zone').selectOption('left');
    await panel().getByLabel('Colour').fill('#00ff88');
    await panel().getByLabel('Pattern').selectOption('wave');
    await panel().getByRole('button', { name: 'Play' }).click();
    await eventually(() => left.looks.length > 0, 5000);
    const look = left.looks[0]!;
    expect(look).toMatchObject({ zone: 'left', color: '#00ff88', brightness: 1, pattern: { type: 'wave', direction: 0, speed: 0.5 } });
    expect(look.at - Number(look.id.split('-')[0])).toBe(100);
    await expect.poll(() => page.locator('#status').textContent()).toMatch(/Playing #00ff88 on zone left of Lit wall/);
    // a listener added late gets the current look at once
    const late: Light[] = [];
    left.live.on('light', (l) => late.push(l));
    await eventually(() => late.length === 1, 1000);
    await panel().getByRole('button', { name: /^Off/ }).click();
    await eventually(() => left.looks.at(-1)?.off === true, 5000);
    await new Promise((r) => setTimeout(r, 300));
    expect(right.looks).toEqual([]);
  });

  it('shows within how many ms 95 % of each zone\'s phones are synced, from the reports the histogram counts', async () => {
    // the client library's phones report their uncertainty on their second and later time exchanges: the histogram counts them
    await eventually(() => phones.every((p) => Number.isFinite(p.clockUncertaintyMs())), 5000);
    const leftCount = async () => sample(await (await fetch(`http://127.0.0.1:${t.gw.opsPort}/metrics`)).text(), `audience_gateway_live_clock_uncertainty_seconds_count{layout="${LAYOUT.layoutId}",zone="left"}`);
    await expect.poll(leftCount, { timeout: 5000 }).toBeGreaterThanOrEqual(2);
    // the panel's figures, from phones whose reports the test chooses (a loaded machine's loopback has no fixed round trip)
    for (const p of phones.splice(0)) p.stop();
    const reporting = async (zone: string, uncertaintyMs: number) => {
      const minted = await postJson(`${t.url}/token`, { layoutId: LAYOUT.layoutId, zone }, { 'x-api-key': t.apiKey });
      expect(minted.status, JSON.stringify(minted.body)).toBe(200); // else its socket's 401 would hide why
      const s = await connectLive(t.url, minted.body.token as string);
      s.send({ op: 'time', ref: 't1', uncertaintyMs });
      await s.next('time');
      return s;
    };
    const sockets = [await reporting('left', 0.4), await reporting('left', 3.1), await reporting('right', 0.8), await reporting('right', 12.5)];
    try {
      const sync = panel().locator('[data-sync] li');
      await expect.poll(() => sync.allTextContents(), { timeout: 20_000 }).toEqual([
        'left: 95 % of phones within 4 ms, half within 1 ms (2 phones)',
        'right: 95 % of phones within 16 ms, half within 1 ms (2 phones)',
      ]);
      expect(await axeViolations(page)).toEqual([]);
    } finally {
      for (const s of sockets) s.ws.close();
    }
  });

  it('refuses what it cannot play with the stable codes of audiencectl light', async () => {
    const r = await page.evaluate(async (layoutId) => {
      const csrf = (await (await fetch('/admin/api/session')).json()) as { csrfToken: string };
      const post = (body: unknown) => fetch(`/admin/api/layouts/${layoutId}/light`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-csrf-token': csrf.csrfToken }, body: JSON.stringify(body) }).then(async (x) => [x.status, ((await x.json()) as { error?: { code: string } }).error?.code]);
      return [await post({ zone: 'stage', color: '#ffffff' }), await post({ zone: 'left', color: 'red' }), await post('not a look')];
    }, LAYOUT.layoutId);
    expect(r).toEqual([[400, 'zone_not_found'], [400, 'invalid_body'], [400, 'invalid_body']]);
  });
});
