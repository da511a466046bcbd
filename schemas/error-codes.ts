// The stable error codes of the contract: what `{success:false, error:{code}}` and a live `error`
// frame carry. The gateway's table (gateway/errors.ts) gives each its status and message and must
// name exactly these; the client types LiveError.code with them.

export const ERROR_CODES = [
  // request shape
  'invalid_json', 'invalid_request', 'invalid_body', 'unsupported_media_type', 'body_too_large', 'not_found', 'method_not_allowed',
  'protocol_missing', 'upgrade_invalid', 'origin_not_allowed',
  // API keys
  'api_key_missing', 'api_key_invalid', 'api_key_revoked',
  // audience tokens
  'token_missing', 'token_invalid', 'token_expired', 'token_revoked', 'token_layout_mismatch', 'token_mismatch',
  // layouts and actions
  'layout_not_found', 'control_not_found', 'zone_not_found', 'light_canvas_missing', 'type_mismatch', 'invalid_value',
  'idempotency_key_invalid', 'idempotency_key_reused', 'moderated', 'rate_limited',
  // availability
  'unavailable', 'internal',
  // team management
  'login_failed', 'too_many_attempts', 'session_required', 'csrf_failed', 'admin_exists', 'admin_not_found',
  // control plane
  'invalid_argument', 'invalid_layout', 'team_not_found', 'layout_owned_by_other_team', 'page_not_found', 'cue_not_found',
  'item_not_found', 'key_not_found', 'signing_key_not_found', 'signing_key_in_use',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

const KNOWN: ReadonlySet<string> = new Set(ERROR_CODES);
export const isErrorCode = (code: string): code is ErrorCode => KNOWN.has(code);
