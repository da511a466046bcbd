// Pure checks of an action against its layout's active page (spec 4.3 and the value table).
import type { ActionValue, Control } from '../../schemas/types.js';
import { WHOLE_DOCUMENT, describeFirstError, validateValue } from '../../schemas/validators.js';
import type { ActionRequest } from '../../schemas/types.js';
import { AppError } from '../errors.js';
import type { LiveLayout } from '../layouts/layout-cache.js';
import { cleanText } from '../moderation/text-policy.js';

/**
 * The control the action targets and its value normalised for the stream (Button -> null; a String
 * without its control, bidi and zero-width characters), or an AppError.
 */
export function checkAction(layout: LiveLayout, body: ActionRequest): { control: Control; value: ActionValue } {
  const control = layout.controls.get(body.lid);
  if (!control) throw new AppError('control_not_found', `no control with lid ${body.lid} on the active page "${layout.activePageId}"`);
  if (control.type !== body.type) throw new AppError('type_mismatch', `control ${body.lid} is a ${control.type}, not a ${body.type}`);
  const value = body.value === undefined ? null : body.value;
  const validate = validateValue[control.type];
  if (!validate(value, WHOLE_DOCUMENT)) throw new AppError('invalid_value', describeFirstError(validate.errors, `${control.type} value`));
  if (control.type === 'Index' && !control.options?.some((o) => o.index === value)) {
    throw new AppError('invalid_value', `Index value must be one of the option indices 0..${(control.options?.length ?? 1) - 1}`);
  }
  if (control.type === 'String') return { control, value: cleanText(value as string) };
  return { control, value: value as ActionValue };
}
