// The scenarios shipped in bench/scenarios (the README's, the 50,000-phone show, the bench's show,
// the crowd `npm start` suggests) are valid as the tool reads them, and every page a cue waits for exists in the layout they play
// (the demo layout; the benches' live-bench is the demo layout under another id).
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadScenario } from '../../loadtest/scenario.js';
import { DEMO_LAYOUT_FILE } from '../../schemas/demo-layout.js';

const DIR = fileURLToPath(new URL('../../bench/scenarios/', import.meta.url));
const demo = JSON.parse(readFileSync(DEMO_LAYOUT_FILE, 'utf8')) as { layoutId: string; pages: { pageId: string }[] };

describe('bench/scenarios', () => {
  const files = readdirSync(DIR).filter((f) => f.endsWith('.json'));
  it('holds the README scenario, the 50,000-phone show, the bench show and the demo\'s crowd', () => {
    expect(files.sort()).toEqual(['bench-show.json', 'demo-crowd.json', 'demo-show.json', 'show-50k.json']);
  });
  it.each(files)('%s is a valid scenario whose cues wait for pages of the demo layout', (file) => {
    const { scenario } = loadScenario(`${DIR}${file}`);
    expect([demo.layoutId, 'live-bench']).toContain(scenario.layoutId);
    const cues = scenario.phases.flatMap((p) => (p.onPage ? [p.onPage] : []));
    expect(cues.length > 0 || file === 'demo-crowd.json').toBe(true); // the demo's crowd plays the live page, whatever it is
    for (const page of cues) expect(demo.pages.map((p) => p.pageId)).toContain(page);
  });
});
