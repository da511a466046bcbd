// The stream text of a new action entry, for the hot path. An entry is JSON of eight fields (the
// codec in schemas/action-entry.ts); five are the same for every entry of one control, so their
// text is made once per control and each entry adds its id, value and time. The result is the
// same text encodeActionEntry makes of the same entry (test/gateway/entry-text.test.ts).
import type { ActionValue, Control } from '../../schemas/types.js';
import { entryId } from './entry-id.js';

/** `","layoutId":…,"value":` of each control, keyed by the layout's own control object (a changed layout brings new ones). */
const shared = new WeakMap<Control, string>();

/** A new entry's JSON: a fresh id (a UUID: nothing to escape), the control's fields, `value` and `ts`. */
export function newEntryText(layoutId: string, control: Control, value: ActionValue, ts: number): string {
  let middle = shared.get(control);
  if (middle === undefined) {
    middle = `","layoutId":${JSON.stringify(layoutId)},"lid":${JSON.stringify(control.lid)},"address":${JSON.stringify(control.address)},"type":${JSON.stringify(control.type)},"value":`;
    shared.set(control, middle);
  }
  return `{"v":1,"id":"${entryId()}${middle}${JSON.stringify(value)},"ts":${ts}}`;
}
