// The project's ajv: its options, the schemas of this folder, and the validators each process uses,
// by the options they need. The validators run as standalone code that the build writes to
// schemas/generated/ (a process compiling them at start spent a third of a second of CPU on it);
// a test holds that code to what ajv makes of the schemas now.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { SCHEMA_DIR } from './schema-dir.js';
import { CONTROL_TYPES } from './types.js';

export interface AjvOptions {
  /** also turns strings into numbers (for environment variables); implies `defaults` */
  coerce?: boolean;
  /** fills in schema defaults */
  defaults?: boolean;
  /** reports every error, not the first */
  allErrors?: boolean;
  /** keeps each validator's source, for standalone code */
  source?: boolean;
}

/** A fresh ajv with this project's schemas. */
export function createAjv(opts: AjvOptions = {}): Ajv {
  const ajv = new Ajv({
    allErrors: opts.allErrors === true,
    strict: true,
    strictRequired: false,
    allowUnionTypes: true,
    discriminator: true, // action-entry: only the branch its type names is checked (no failed if, no error objects)
    useDefaults: opts.coerce === true || opts.defaults === true,
    coerceTypes: opts.coerce === true,
    ...(opts.source === true && { code: { source: true, esm: true } }),
  });
  ajv.addKeyword({ keyword: 'x-env', schemaType: 'string' });
  for (const file of readdirSync(SCHEMA_DIR).filter((f) => f.endsWith('.schema.json')).sort()) {
    ajv.addSchema(JSON.parse(readFileSync(join(SCHEMA_DIR, file), 'utf8')) as object);
  }
  return ajv;
}

/** Each generated module: the options its validators are made with, and each export's schema. */
export const VALIDATOR_SETS: Record<string, { options: AjvOptions; exports: Record<string, string> }> = {
  // the contract's documents as the processes check them: the first error, nothing filled in
  contract: {
    options: {},
    exports: {
      actionRequest: 'action-request.schema.json',
      liveClientFrame: 'live-frames.schema.json',
      tokenRequest: 'token-request.schema.json',
      layoutDefinition: 'layout-definition.schema.json',
      actionEntry: 'action-entry.schema.json',
      crowdSummary: 'crowd-summary.schema.json',
      recordEntry: 'show-record-entry.schema.json',
      lightLook: 'light-look.schema.json',
      adminLogin: 'admin-requests.schema.json#/$defs/login',
      adminCreateKey: 'admin-requests.schema.json#/$defs/createKey',
      adminRevokeTokens: 'admin-requests.schema.json#/$defs/revokeTokens',
      adminActivate: 'admin-requests.schema.json#/$defs/activate',
      ...Object.fromEntries(CONTROL_TYPES.map((t) => [`value${t}`, `action-value.schema.json#/$defs/${t}`])),
    },
  },
  // a layout as a person fixing it reads the errors: all of them
  'all-errors': { options: { allErrors: true }, exports: { layoutDefinition: 'layout-definition.schema.json' } },
  // configuration from files: the schema's defaults filled in
  defaults: { options: { defaults: true }, exports: { bridgeConfig: 'bridge-config.schema.json', loadtestScenario: 'loadtest-scenario.schema.json' } },
  // configuration from the environment: strings made numbers, defaults filled in
  coerce: { options: { coerce: true }, exports: { gatewayConfig: 'gateway-config.schema.json' } },
};
