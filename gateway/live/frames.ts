// The frames of the live channel (schemas/live-frames.schema.json) as the server writes them, the
// subprotocols a client offers, and the close codes that tell a client what to do.
import type { CrowdValue } from '../../schemas/crowd-merge.js';
import { AppError } from '../errors.js';
import type { LiveLayout } from '../layouts/layout-cache.js';

/** The subprotocol the server selects: the frames of this version. */
export const PROTOCOL = 'audience-control.v1';
const BEARER = 'bearer.';

/** What the client offered in Sec-WebSocket-Protocol: this protocol, and the token in `bearer.<token>`. */
export function offeredProtocols(header: string): { protocol: boolean; token: string } {
  let protocol = false;
  let token = '';
  for (const part of header.split(',')) {
    const p = part.trim();
    if (p === PROTOCOL) protocol = true;
    else if (p.startsWith(BEARER)) token = p.slice(BEARER.length);
  }
  return { protocol, token };
}

/** Close codes that tell a client what to do. */
export const CLOSE = {
  /** the token is no longer valid (its key revoked, its layout's tokens revoked, its signing key retired): do not reconnect with it */
  tokenInvalid: 4001,
  /** the layout is gone */
  layoutGone: 4004,
  /** the client is too slow to read: reconnect, and start from the current state */
  tooSlow: 4008,
  /** the client kept sending past its budget (FLOOD_CLOSE_AFTER refusals in a row): reconnect later, slower */
  flooding: 4029,
  /** this gateway is stopping: reconnect (with jitter) */
  goingAway: 1001,
} as const;

/** An error frame: the HTTP API's body for the same code, with the client's ref. */
export function errorFrame(ref: string | null, e: unknown): string {
  const err = e instanceof AppError ? e : new AppError('internal');
  const retry = err.headers.find(([name]) => name === 'retry-after');
  return JSON.stringify({ op: 'error', ref, error: { code: err.code, message: err.message, ...(retry && { retryAfterMs: Number(retry[1]) * 1000 }) } });
}

export function ackFrame(ref: string): string {
  return `{"op":"ack","ref":${JSON.stringify(ref)}}`;
}

/** The layout's active page, its controls as GET /layout returns them, and when it was switched to (or imported). */
export function pageFrame(layout: LiveLayout, destinationCount: number): string {
  return JSON.stringify({ op: 'page', layoutId: layout.layoutId, activePageId: layout.activePageId, controls: layout.activeControls, destinationCount, version: layout.version, changedAt: layout.updatedAt });
}

/**
 * A crowd value as phones get it: the value the bridge sends to the displays (one number; [x, y]
 * for centroid; counts per option for votes), the participants counted, and for Slider modes the
 * standard deviation; `zones` the same value and n for each zone that counts someone.
 */
export function crowdFrame(v: CrowdValue): string {
  const shape = (x: readonly number[]) => (v.mode === 'votes' || v.mode === 'centroid' ? x : x[0]);
  const zones = v.zones && Object.fromEntries(Object.entries(v.zones).map(([z, x]) => [z, { value: shape(x.value), n: x.n }]));
  return JSON.stringify({ op: 'crowd', lid: v.lid, mode: v.mode, value: shape(v.value), n: v.n, ...(v.sd !== undefined && { sd: v.sd }), ...(zones && { zones }) });
}

/** The lids of the aggregated controls on a layout's active page. */
export function crowdLids(layout: LiveLayout): Set<number> {
  return new Set(layout.activeControls.filter((c) => c.aggregate).map((c) => c.lid));
}
