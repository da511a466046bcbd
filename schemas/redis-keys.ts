// Redis names shared by gateway and bridge: a layout's record, its action stream and its presence set.
// Every key of one layout carries the hash tag {layoutId} so Redis Cluster keeps a layout on one shard.

/**
 * The layout's record, a hash: team, name, activePageId, pages (JSON), zones (JSON), limits,
 * updatedAt, version (bumped by every write). The gateway writes it; a bridge may read it.
 */
export function layoutKey(prefix: string, layoutId: string): string {
  return `${prefix}layout:{${layoutId}}`;
}

/** The stream the gateway appends a layout's accepted actions to, and the bridge reads. */
export function actionStreamKey(prefix: string, layoutId: string): string {
  return `${prefix}layout:{${layoutId}}:actions`;
}

/**
 * Sorted set of the layout's live destinations: member `bridgeId|host:port` (presenceMember),
 * score = expiry (ms epoch).
 */
export function presenceKey(prefix: string, layoutId: string): string {
  return `${prefix}layout:{${layoutId}}:destinations`;
}

/** A destination's member in the presence set: `bridgeId|host:port`, with `|down` after it while the bridge cannot reach the display. */
export function presenceMember(bridgeId: string, target: string, up = true): string {
  return `${bridgeId}|${target}${up ? '' : '|down'}`;
}

/** Whether a presence member's display was reachable when its bridge last said. */
export function presenceUp(member: string): boolean {
  return !member.endsWith('|down');
}

/**
 * The layout's light stream: the looks its phones show (field `look`, light-look.schema.json),
 * appended by audiencectl light and by the bridge's light OSC input, read by every gateway holding
 * sockets on the layout. An entry's id is when Redis took it: the look starts at that time
 * plus the canvas's lightLeadMs.
 */
export function lightStreamKey(prefix: string, layoutId: string): string {
  return `${prefix}layout:{${layoutId}}:light`;
}

/** Where the bridge copies stream entries it cannot use, with the reason. */
export function deadLetterKey(prefix: string, layoutId: string): string {
  return `${prefix}layout:{${layoutId}}:dead-letters`;
}

/**
 * Hash of the layout's crowd cues: `gen:page` (bumped by every page switch: re-arms them all),
 * `gen:<lid>` (bumped by a re-arm of one), `fired:<lid>` (JSON: the last firing in the current arm,
 * written by the bridge that made it), `phase:<lid>` (JSON: what the bridges last saw it doing),
 * `live:<pageId>` (the lids of that page's controls with a cue, "4,3", written by the import) and
 * `live` (the active page's: only those fire).
 */
export function cueStateKey(prefix: string, layoutId: string): string {
  return `${prefix}layout:{${layoutId}}:cues`;
}

/** A layout's show record (schemas/show-record.ts): a stream of what decided the show. */
export function showRecordKey(prefix: string, layoutId: string): string {
  return `${prefix}layout:{${layoutId}}:record`;
}

/**
 * The show record's state: `bytes` (the JSON the record holds), `retentionMs` and `maxBytes` (set
 * by the gateways), and per aggregated control `v:<lid>` (its last sampled crowd value, JSON
 * `{"value":[...],"n":N}`) and `at:<lid>` (when, ms).
 */
export function showRecordStateKey(prefix: string, layoutId: string): string {
  return `${prefix}layout:{${layoutId}}:record-state`;
}
