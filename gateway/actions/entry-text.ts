// The control's part of a new action entry's text (schemas/action-entry.ts gives the parts and
// their order), made once per control for the hot path: entry-batch.ts writes each entry from the
// parts; test/gateway/entry-text.test.ts checks its text against encodeActionEntry.
import { entryControlPart } from '../../schemas/action-entry.js';
import type { Control } from '../../schemas/types.js';

export { ENTRY_PREFIX, ENTRY_TS } from '../../schemas/action-entry.js';

/** `","layoutId":…,"value":` of each control, as UTF-8, keyed by the layout's own control object (a changed layout brings new ones). */
const shared = new WeakMap<Control, Buffer>();

export function sharedBytes(layoutId: string, control: Control): Buffer {
  let bytes = shared.get(control);
  if (bytes === undefined) {
    bytes = Buffer.from(entryControlPart(layoutId, control.lid, control.address, control.type), 'utf8');
    shared.set(control, bytes);
  }
  return bytes;
}
