// What one team can learn of another's layouts. layoutIds are global (GET /layout/{layoutId} has
// no team), so importing an id another team owns is refused (409, from the CLI and the team page
// alike): an administrator can learn that an id is taken, and nothing else. Reading another team's
// layout answers exactly like a missing one, at the same cost: misses are cached too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signIn } from '../helpers/admin.js';
import { DEMO_LAYOUT, eventually, getLayout, NO_RECHECK, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { sample, scrape } from '../helpers/metrics.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
let t: TestGateway;
let rivalTeam: string;
beforeAll(async () => {
  t = await startTestGateway({ redisUrl: redis.get().server.url, overrides: NO_RECHECK }); // only the import's message can forget a miss
  rivalTeam = (await t.admin.teams.create('Rival')).teamId;
  await t.admin.layouts.import(rivalTeam, { ...DEMO_LAYOUT, layoutId: 'rival-show' });
});
afterAll(() => t.close());

const loads = async () => sample(await scrape(t.gw.opsPort), 'audience_gateway_redis_command_duration_seconds_count{command="layout_load"}') || 0;
const strip = (body: unknown) => JSON.stringify(body);

describe('layout existence', () => {
  it('another team’s layout and a missing one get the same answer', async () => {
    const rival = await getLayout(t, 'rival-show', t.apiKey);
    const missing = await getLayout(t, 'no-such-show', t.apiKey);
    expect([rival.status, strip(rival.body)]).toEqual([missing.status, strip(missing.body)]);
    expect(rival.status).toBe(404);
  });

  it('caches a miss like a hit: asking again for a missing layout reads Redis no more', async () => {
    await getLayout(t, 'missing-twice', t.apiKey);
    const before = await loads();
    for (let i = 0; i < 5; i++) expect((await getLayout(t, 'missing-twice', t.apiKey)).status).toBe(404);
    expect(await loads()).toBe(before);
  });

  it('forgets a cached miss as soon as the layout is imported', async () => {
    expect((await getLayout(t, 'late-show', t.apiKey)).status).toBe(404);
    await t.admin.layouts.import(t.teamId, { ...DEMO_LAYOUT, layoutId: 'late-show' });
    await eventually(async () => (await getLayout(t, 'late-show', t.apiKey)).status === 200);
  });

  it('the team page answers 409 layout_owned_by_other_team for a taken id, as the CLI does, and creates an unused one', async () => {
    const email = `admin-${Date.now()}@team.example`;
    await t.admin.admins.create(t.teamId, email, 'a long enough password');
    const a = await signIn(t, email, 'a long enough password');
    const taken = await a.req('PUT', '/admin/api/layouts/rival-show', { ...DEMO_LAYOUT, layoutId: 'rival-show' });
    expect([taken.status, taken.body.error.code]).toEqual([409, 'layout_owned_by_other_team']);
    const fresh = await a.req('PUT', '/admin/api/layouts/fresh-show', { ...DEMO_LAYOUT, layoutId: 'fresh-show' });
    expect(fresh.status).toBe(200);
    // reading or activating the taken one is still indistinguishable from a missing one
    expect((await a.req('POST', '/admin/api/layouts/rival-show/activate', { pageId: 'encore' })).body.error.code).toBe('layout_not_found');
  });
});
