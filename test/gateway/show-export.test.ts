// The show record's export reads every entry against its schema: an entry of another shape (a
// bridge's credential writes the record too) is counted as unreadable and left out, never fatal,
// through audiencectl and the team page alike; and every text cell is escaped against formulas,
// whichever column it stands in, while numbers stay numbers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordCsv } from '../../gateway/store/show-export.js';
import { RECORD_FIELD } from '../../schemas/show-record.js';
import { audiencectl } from '../helpers/cli.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { signIn } from '../helpers/admin.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ redisUrl: redis.get().server.url });
  await t.admin.admins.create(t.teamId, 'producer@team.example', 'stage-door-1234');
});
afterAll(() => t.close());

const stream = () => t.admin.keys.showRecord(t.layoutId).stream;
const add = (entry: unknown) => redis.get().client.xadd(stream(), '*', RECORD_FIELD, typeof entry === 'string' ? entry : JSON.stringify(entry));
const cue = { kind: 'cue', lid: 4, value: 1, crowd: [0, 3], n: 3, by: 'venue-a' };

describe('the show record export', () => {
  it('counts an entry of another shape as unreadable and exports the rest (audiencectl and the team page)', async () => {
    await add(cue);
    await add({ kind: 'cue' }); // no crowd: the CSV row could not be made
    await add({ ...cue, lid: '=HYPERLINK("http://x.example","click")' });
    await add({ ...cue, crowd: "=cmd|'/c calc'!A1" });
    await add({ kind: 'crowd', lid: 4, value: '@SUM(A1:A9)', n: 1 });
    await add({ kind: 'moderation', decision: 'dance', item: null, by: 'x', sub: 's', lid: null, text: null });
    await add({ ...cue, extra: 'x'.repeat(10) });
    await add({ kind: 'page', from: 'a', to: 'b', by: 'admin:x', values: [{ lid: 1, value: [0.5], n: 'many' }] });
    await add('{"kind":"cue","lid":4,"value":1,"crowd":[0,3],"n":3,"by":"=1+1"}');
    const env = { REDIS_URL: redis.get().server.url, REDIS_PREFIX: t.config.redisPrefix };
    const r = await audiencectl(env, 'show', 'export', t.layoutId, '--format', 'csv');
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('7 entries of the record are not readable');
    const rows = r.stdout.trimEnd().split('\r\n').slice(1);
    expect(rows).toHaveLength(2);
    expect(rows[1]).toContain(",'=1+1,"); // a bridge's id that looks like a formula, made text
    const admin = await signIn(t, 'producer@team.example', 'stage-door-1234');
    const download = await fetch(`${t.url}/admin/api/layouts/${t.layoutId}/record?format=csv`, { headers: { cookie: admin.cookie } });
    expect(download.status).toBe(200);
    expect(download.headers.get('x-unreadable-entries')).toBe('7');
    expect(await download.text()).toBe(r.stdout);
    const json = await fetch(`${t.url}/admin/api/layouts/${t.layoutId}/record?format=json`, { headers: { cookie: admin.cookie } });
    expect(((await json.json()) as { unreadable: number }).unreadable).toBe(7);
  });

  it('escapes a formula in any text cell, and leaves a number (a negative one too) as it is', () => {
    const csv = recordCsv([
      { kind: 'page', from: '=A1', to: '+A2', by: '@A3', values: [{ lid: 1, value: [-0.5], n: 2 }], at: 0 },
      { kind: 'cue', lid: 4, value: -1, crowd: [-1, 2], n: 3, by: '\tA4', at: 1 },
    ]);
    const [, page, fired] = csv.trimEnd().split('\r\n');
    expect(page).toBe(`1970-01-01T00:00:00.000Z,page,'@A3,,,,"[{""lid"":1,""value"":[-0.5],""n"":2}]",'=A1,'+A2,,,,`);
    expect(fired).toBe(`1970-01-01T00:00:00.001Z,cue,'\tA4,4,-1,3,'-1 2,,,,,,`); // a list of numbers is text: escaped too
  });
});
