// Compiled validators for every schema in this folder, built once per process with ajv.
// The JSON files are the contract; this module is how both processes apply it.
import type { RecordEntry } from './show-record.js';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { DataValidationCxt } from 'ajv/dist/types/index.js';
import type { CrowdSummary } from './aggregate.js';
import type { LightLook } from './light.js';
import { CONTROL_TYPES, type ActionEntry, type ActionRequest, type ControlType, type LayoutDefinition, type TokenRequest } from './types.js';

/** The folder holding the *.schema.json files (copied next to the compiled module by the build). */
export const SCHEMA_DIR = dirname(fileURLToPath(import.meta.url));

function loadSchemas(ajv: Ajv): void {
  for (const file of readdirSync(SCHEMA_DIR).filter((f) => f.endsWith('.schema.json')).sort()) {
    ajv.addSchema(JSON.parse(readFileSync(join(SCHEMA_DIR, file), 'utf8')) as object);
  }
}

/**
 * A fresh ajv with this project's schemas. `defaults` fills in schema defaults; `coerce` also
 * turns strings into numbers (for environment variables) and implies `defaults`.
 */
export function createAjv(opts: { coerce?: boolean; defaults?: boolean; allErrors?: boolean } = {}): Ajv {
  const ajv = new Ajv({
    allErrors: opts.allErrors === true,
    strict: true,
    strictRequired: false,
    allowUnionTypes: true,
    discriminator: true, // action-entry: only the branch its type names is checked (no failed if, no error objects)
    useDefaults: opts.coerce === true || opts.defaults === true,
    coerceTypes: opts.coerce === true,
  });
  ajv.addKeyword({ keyword: 'x-env', schemaType: 'string' });
  loadSchemas(ajv);
  return ajv;
}

function compile<T>(ajv: Ajv, id: string): ValidateFunction<T> {
  const fn = ajv.getSchema<T>(id);
  if (!fn) throw new Error(`schema ${id} is missing from ${SCHEMA_DIR}`);
  return fn;
}

const ajv = createAjv();

/**
 * The context of a whole document, made once, for validators on a hot path: called without one, an
 * ajv validator allocates an empty object for its default on every call (56 bytes, per action in
 * the gateway, per entry in the bridge). Nothing in it is changed by a validator.
 */
export const WHOLE_DOCUMENT = Object.freeze({ instancePath: '' }) as DataValidationCxt;

export const validateActionRequest = compile<ActionRequest>(ajv, 'action-request.schema.json');
/** A client's frame on the live channel (live-frames.schema.json). */
export interface LiveActionFrame {
  op: 'action';
  ref: string;
  layoutId?: string;
  lid: number;
  type: ActionRequest['type'];
  value?: unknown;
  idempotencyKey?: string;
}
/** A client's new token for its socket (live-frames.schema.json#/$defs/refresh). */
export interface LiveRefreshFrame {
  op: 'refresh';
  token: string;
}
/** One value of a restatement: what the client last sent to an aggregated control, and how long ago. */
export interface LiveRestatedValue {
  lid: number;
  type: ActionRequest['type'];
  value?: unknown;
  ageMs: number;
}
/** A client's latest values after a reconnect (live-frames.schema.json#/$defs/restate). */
export interface LiveRestateFrame {
  op: 'restate';
  ref: string;
  values: LiveRestatedValue[];
}
/** A client's heartbeat (live-frames.schema.json#/$defs/ping). */
export interface LivePingFrame {
  op: 'ping';
}
/** A client's clock exchange (live-frames.schema.json#/$defs/time). */
export interface LiveTimeFrame {
  op: 'time';
  ref: string;
  /** the client's clock uncertainty, ms (its sync report) */
  uncertaintyMs?: number;
}
export const validateLiveClientFrame = compile<LiveActionFrame | LiveRefreshFrame | LiveRestateFrame | LivePingFrame | LiveTimeFrame>(ajv, 'live-frames.schema.json');
export const validateTokenRequest = compile<TokenRequest>(ajv, 'token-request.schema.json');
export const validateLayoutDefinition = compile<LayoutDefinition>(ajv, 'layout-definition.schema.json');
/** The same check reporting every error, not the first: for a person fixing a layout, not a hot path. */
export const validateLayoutDefinitionAll = compile<LayoutDefinition>(createAjv({ allErrors: true }), 'layout-definition.schema.json');
export const validateActionEntry = compile<ActionEntry>(ajv, 'action-entry.schema.json');
export const validateCrowdSummary = compile<CrowdSummary>(ajv, 'crowd-summary.schema.json');
export const validateRecordEntry = compile<RecordEntry>(ajv, 'show-record-entry.schema.json');
/** A look for a layout's phones (light-look.schema.json): what the light stream holds. */
export const validateLightLook = compile<LightLook>(ajv, 'light-look.schema.json');

export const validateAdminLogin = compile<{ email: string; password: string }>(ajv, 'admin-requests.schema.json#/$defs/login');
export const validateAdminCreateKey = compile<{ name?: string; layouts?: string[]; mintRate?: number; mintBurst?: number }>(ajv, 'admin-requests.schema.json#/$defs/createKey');
export const validateAdminRevokeTokens = compile<{ before?: string }>(ajv, 'admin-requests.schema.json#/$defs/revokeTokens');
export const validateAdminActivate = compile<{ pageId: string }>(ajv, 'admin-requests.schema.json#/$defs/activate');

/** One validator per control type for the action's value. */
export const validateValue: Readonly<Record<ControlType, ValidateFunction>> = Object.freeze(
  Object.fromEntries(CONTROL_TYPES.map((t) => [t, compile(ajv, `action-value.schema.json#/$defs/${t}`)])) as Record<
    ControlType,
    ValidateFunction
  >,
);

/** "/layouts/0/targets/1/port" -> "layouts[0].targets[1].port" */
export function jsonPointerToPath(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((seg) => (/^\d+$/.test(seg) ? `[${seg}]` : `.${seg}`))
    .join('')
    .replace(/^\./, '');
}

/** The first schema error as a sentence that names the offending field. */
export function describeFirstError(errors: ErrorObject[] | null | undefined, what = 'body'): string {
  const e = errors?.[0];
  if (!e) return `${what} is invalid`;
  return describeError(e, what);
}

/**
 * Every schema error as a sentence naming its field, once each; the bookkeeping errors of a
 * combinator (`if`, `anyOf`, `oneOf`) are left out when the errors beneath them say what is wrong.
 */
export function describeErrors(errors: ErrorObject[] | null | undefined, what = 'body'): string[] {
  const all = errors ?? [];
  const leaves = all.filter((e) => !['if', 'anyOf', 'oneOf', 'not'].includes(e.keyword) || !all.some((x) => x !== e && x.instancePath.startsWith(e.instancePath) && x.schemaPath.startsWith(e.schemaPath.slice(0, e.schemaPath.lastIndexOf('/')))));
  return [...new Set((leaves.length > 0 ? leaves : all).map((e) => describeError(e, what)))];
}

function describeError(e: ErrorObject, what: string): string {
  const at = what + e.instancePath.replace(/\/(\d+)(?=\/|$)/g, '[$1]').replaceAll('/', '.');
  switch (e.keyword) {
    case 'required':
      return `${at} is missing the field "${String(e.params.missingProperty)}"`;
    case 'additionalProperties':
      return `${at} has an unknown field "${String(e.params.additionalProperty)}"`;
    case 'pattern':
      // the one pattern on a value (action-value.schema.json#/$defs/String) gets words, not a regex
      return String(e.params.pattern).includes('\\u0000') ? `${at} must not contain U+0000 or an unpaired surrogate (OSC strings are NUL-terminated UTF-8)` : `${at} ${e.message ?? 'is invalid'}`;
    case 'discriminator': {
      // the field that picks a oneOf branch (live-frames' op, action-entry's type): absent is `required`
      const { error, tag, tagValue } = e.params as { error: 'tag' | 'mapping'; tag: string; tagValue: unknown };
      return error === 'tag' ? `${at}.${tag} must be a string` : `${at}.${tag} has an unknown value ${JSON.stringify(tagValue)}`;
    }
    case 'enum':
      return `${at} must be one of ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    default:
      return `${at} ${e.message ?? 'is invalid'}`;
  }
}
