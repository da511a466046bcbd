// The stream text of a new action entry, for the hot path. An entry is JSON of eight fields (the
// codec in schemas/action-entry.ts) in a fixed order: `{"v":1,"id":"<id>` ENTRY_PREFIX and the id,
// then `","layoutId":…,"value":` (five fields that are the same for every entry of one control,
// made once per control), the value's JSON, `,"ts":<ts>` and `}`. entry-batch.ts writes it from
// these parts; test/gateway/entry-text.test.ts checks it against encodeActionEntry.
import type { Control } from '../../schemas/types.js';

/** The entry's text up to its id. */
export const ENTRY_PREFIX = '{"v":1,"id":"';
/** Between the value and the time. */
export const ENTRY_TS = ',"ts":';

/** `","layoutId":…,"value":` of each control, as UTF-8, keyed by the layout's own control object (a changed layout brings new ones). */
const shared = new WeakMap<Control, Buffer>();

export function sharedBytes(layoutId: string, control: Control): Buffer {
  let bytes = shared.get(control);
  if (bytes === undefined) {
    bytes = Buffer.from(`","layoutId":${JSON.stringify(layoutId)},"lid":${JSON.stringify(control.lid)},"address":${JSON.stringify(control.address)},"type":${JSON.stringify(control.type)},"value":`, 'utf8');
    shared.set(control, bytes);
  }
  return bytes;
}
