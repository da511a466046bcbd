// docs/layouts.md's complete layout imports as it stands (every control type, an aggregate of each
// mode, both kinds of cue, zones), and the layout schema a gateway serves at /schemas/layout.json
// checks it as an editor would: fetched over HTTP with the schemas it refers to beside it.
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODES_BY_TYPE } from '../../schemas/aggregate.js';
import { getLayout, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ redisUrl: redis.get().server.url });
});
afterAll(() => t.close());

const block = [...readFileSync('docs/layouts.md', 'utf8').matchAll(/```json\n([\s\S]*?)```/g)].map((m) => m[1]!).find((b) => b.includes('"festival-finale"'))!;
const LAYOUT = JSON.parse(block) as { layoutId: string; zones: string[]; pages: { controls: { type: string; aggregate?: { mode: string; cue?: { share?: number; above?: number } } }[] }[] };

describe('docs/layouts.md', () => {
  it('holds every control type, an aggregate of each mode, both kinds of cue and zones', () => {
    const controls = LAYOUT.pages.flatMap((p) => p.controls);
    expect(new Set(controls.map((c) => c.type))).toEqual(new Set(Object.keys(MODES_BY_TYPE)));
    expect(new Set(controls.flatMap((c) => (c.aggregate ? [c.aggregate.mode] : [])))).toEqual(new Set(Object.values(MODES_BY_TYPE).flat()));
    expect(controls.some((c) => c.aggregate?.cue?.share !== undefined)).toBe(true);
    expect(controls.some((c) => c.aggregate?.cue?.above !== undefined)).toBe(true);
    expect(LAYOUT.zones.length).toBeGreaterThan(0);
  });

  it('imports as it stands, its $schema line included (and not stored)', async () => {
    await t.admin.layouts.import(t.teamId, LAYOUT);
    const r = await getLayout(t, LAYOUT.layoutId, t.apiKey);
    expect(r.status).toBe(200);
    expect(r.body.controls).toHaveLength(LAYOUT.pages[0]!.controls.length);
    expect(JSON.stringify(await t.admin.layouts.get(LAYOUT.layoutId))).not.toContain('$schema');
  });

  it('is checked by the schema served at /schemas/layout.json, fetched with its references as an editor does', async () => {
    const fetched: string[] = [];
    const ajv = new Ajv({ allErrors: true, strict: false, loadSchema: async (uri: string) => {
      fetched.push(uri);
      const r = await fetch(new URL(uri, `${t.url}/schemas/`));
      expect(r.headers.get('access-control-allow-origin')).toBe('*');
      return (await r.json()) as object;
    } });
    const schema = (await (await fetch(`${t.url}/schemas/layout.json`)).json()) as object;
    const validate = await ajv.compileAsync(schema);
    expect(validate(LAYOUT), JSON.stringify(validate.errors)).toBe(true);
    expect(fetched.length).toBeGreaterThan(0); // it followed its $refs to the schemas beside it
    expect(validate({ ...LAYOUT, activePageId: 'not an id' })).toBe(false);
    expect((await fetch(`${t.url}/schemas/nothing.json`)).status).toBe(404);
  });
});
