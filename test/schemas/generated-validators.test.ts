// The processes validate with ajv's standalone code, which the build writes to schemas/generated/
// beside committed type declarations: both are what ajv makes of the schemas now, and a validator
// from the generated code answers as one compiled from the schema at run time does.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createAjv, VALIDATOR_SETS } from '../../schemas/ajv.js';
import { buildValidatorModules, GENERATED_DIR } from '../../schemas/standalone.js';
import { validateActionRequest, validateLayoutDefinitionAll, validateValue } from '../../schemas/validators.js';
import { gatewayConfig } from '../../schemas/generated/coerce.js';
import { DEMO_LAYOUT } from '../helpers/gateway.js';

describe('the generated validators', () => {
  it('are what the build makes of the schemas now (npm run build writes them; commit the .d.ts files it changes)', () => {
    const built = buildValidatorModules();
    expect(readdirSync(GENERATED_DIR).sort()).toEqual([...built.keys()].sort());
    for (const [file, text] of built) expect(readFileSync(join(GENERATED_DIR, file), 'utf8'), file).toBe(text);
  });

  it('answer as validators compiled from the schemas at run time do, errors included', () => {
    const runtime = createAjv();
    const compiled = (id: string) => runtime.getSchema(id)!;
    const actions: unknown[] = [{ layoutId: 'a', lid: 1, type: 'Slider', value: 0.5 }, { layoutId: 'a', lid: 1, type: 'Slider' }, { lid: 'x' }, null, 'text', { layoutId: 'a', lid: 1, type: 'Nope', value: 1 }];
    for (const body of actions) {
      const runtimeCheck = compiled(VALIDATOR_SETS.contract!.exports.actionRequest!);
      expect(validateActionRequest(body), JSON.stringify(body)).toBe(runtimeCheck(body));
      expect(validateActionRequest.errors ?? null).toEqual(runtimeCheck.errors ?? null);
    }
    expect(validateValue.String('a\u0000b')).toBe(false);
    expect(validateValue.XYPad([0.5, 0.5])).toBe(true);
    // every error of a broken layout, as the all-errors set reports them
    const broken = { ...DEMO_LAYOUT, pages: [{ pageId: 'main', name: 1, controls: [{ lid: 'x' }] }] };
    const all = createAjv({ allErrors: true }).getSchema('layout-definition.schema.json')!;
    expect(validateLayoutDefinitionAll(broken)).toBe(all(broken));
    expect(validateLayoutDefinitionAll.errors).toEqual(all.errors);
    expect(validateLayoutDefinitionAll.errors!.length).toBeGreaterThan(1);
  });

  it('fill in defaults and turn strings into numbers where their set says so', () => {
    const raw: Record<string, unknown> = { port: '8080' };
    expect(gatewayConfig(raw)).toBe(true);
    expect(raw.port).toBe(8080);
    expect(raw.host).toBeTypeOf('string');
  });
});
