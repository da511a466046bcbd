// The demo layout: every control type and a crowd (aggregates, cues, zones) on two pages. `npm start`
// seeds it, and the OpenAPI document's examples show it as `GET /layout` answers it.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The layout's JSON file (copied next to the compiled module by the build). */
export const DEMO_LAYOUT_FILE = join(dirname(fileURLToPath(import.meta.url)), 'demo-layout.json');
export const DEMO_LAYOUT_ID = 'demo-show';
