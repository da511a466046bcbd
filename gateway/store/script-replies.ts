// What the Lua scripts' refusing reply codes mean, in one table (each script's header lists all its
// codes): a caller reads the code of a reply and throws what scriptRefusal gives it, with its own
// message where it has more to say. Codes not listed here are not refusals (done, done before).
import { AppError, type ErrorCode } from '../errors.js';

const REFUSALS = {
  appendOnce: { 2: 'idempotency_key_reused', 3: 'rate_limited' },
  activatePage: { 0: 'layout_not_found', [-1]: 'page_not_found' },
  importLayout: { [-1]: 'layout_owned_by_other_team' },
  revokeTokens: { 0: 'layout_not_found' },
  createAdmin: { 0: 'admin_exists' },
} as const satisfies Record<string, Record<number, ErrorCode>>;

export type RefusingScript = keyof typeof REFUSALS;

/** The error code a script's reply code stands for, or null when the code is not a refusal. */
export function scriptRefusal(script: RefusingScript, code: number): ErrorCode | null {
  return (REFUSALS[script] as Record<number, ErrorCode>)[code] ?? null;
}

/** Throws the refusal a reply code stands for (with this message, if given); returns when it is none. */
export function throwIfRefused(script: RefusingScript, code: number, message?: string): void {
  const refusal = scriptRefusal(script, code);
  if (refusal !== null) throw new AppError(refusal, message);
}
