// The crowd-aggregation contract: the JSON Schemas and the table of modes per type say the same.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MODES_BY_TYPE } from '../../schemas/aggregate.js';
import { AGGREGATE_MODES, CONTROL_TYPES } from '../../schemas/types.js';

const schema = (file: string) => JSON.parse(readFileSync(new URL(`../../schemas/${file}`, import.meta.url), 'utf8')) as Record<string, any>;

describe('crowd aggregation contract', () => {
  it('every mode fits exactly one control type, and String takes none', () => {
    expect(Object.keys(MODES_BY_TYPE).sort()).toEqual([...CONTROL_TYPES].sort());
    expect(Object.values(MODES_BY_TYPE).flat().sort()).toEqual([...AGGREGATE_MODES].sort());
    expect(MODES_BY_TYPE.String).toEqual([]);
  });

  it('the layout schema and the summary schema allow exactly these modes and windows', () => {
    const control = schema('control.schema.json').properties.aggregate;
    const summary = schema('crowd-summary.schema.json').properties;
    expect([...control.properties.mode.enum].sort()).toEqual([...AGGREGATE_MODES].sort());
    expect([...summary.mode.enum].sort()).toEqual([...AGGREGATE_MODES].sort());
    expect([control.properties.windowMs.minimum, control.properties.windowMs.maximum]).toEqual([100, 600_000]);
    expect([summary.windowMs.minimum, summary.windowMs.maximum]).toEqual([100, 600_000]);
    expect([...summary.type.enum].sort()).toEqual(CONTROL_TYPES.filter((t) => MODES_BY_TYPE[t].length > 0).sort());
  });
});
