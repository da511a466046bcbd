// The frames of the live channel (schemas/live-frames.schema.json) as the server writes them, the
// subprotocols a client offered (the protocol itself is schemas/live-protocol.ts).
import type { CrowdValue } from '../../schemas/crowd-merge.js';
import { ACK_PREFIX, BEARER_PREFIX, LIVE_SUBPROTOCOL, SERVER_OP, serverFramePrefix } from '../../schemas/live-protocol.js';
import { AppError } from '../errors.js';
import type { LiveLayout } from '../layouts/layout-cache.js';
import type { LightLook } from '../../schemas/light.js';

/** What the client offered in Sec-WebSocket-Protocol: this protocol, and the token in `bearer.<token>`. */
export function offeredProtocols(header: string): { protocol: boolean; token: string } {
  let protocol = false;
  let token = '';
  for (const part of header.split(',')) {
    const p = part.trim();
    if (p === LIVE_SUBPROTOCOL) protocol = true;
    else if (p.startsWith(BEARER_PREFIX)) token = p.slice(BEARER_PREFIX.length);
  }
  return { protocol, token };
}

/** An error frame: the HTTP API's body for the same code, with the client's ref. */
export function errorFrame(ref: string | null, e: unknown): string {
  const err = e instanceof AppError ? e : new AppError('internal');
  const retry = err.headers.find(([name]) => name === 'retry-after');
  return JSON.stringify({ op: SERVER_OP.error, ref, error: { code: err.code, message: err.message, ...(retry && { retryAfterMs: Number(retry[1]) * 1000 }) } });
}

/** An action stored; `held`: a String held for moderation. */
export function ackFrame(ref: string, held = false): string {
  return `${ACK_PREFIX.slice(0, -1)}${JSON.stringify(ref)}${held ? ',"held":true' : ''}}`;
}

/** The layout's active page (its id and name), its controls as GET /layout returns them, and when it was switched to (or imported). */
export function pageFrame(layout: LiveLayout, destinationCount: number): string {
  const pageName = layout.pages.find((p) => p.pageId === layout.activePageId)?.name ?? layout.activePageId;
  return JSON.stringify({ op: SERVER_OP.page, layoutId: layout.layoutId, activePageId: layout.activePageId, pageName, controls: layout.activeControls, destinationCount, version: layout.version, changedAt: layout.updatedAt });
}

/**
 * A crowd value as phones get it: the value the bridge sends to the displays (one number; [x, y]
 * for centroid; counts per option for votes), the participants counted, and for Slider modes the
 * standard deviation; `zones` the same value and n for each zone that counts someone.
 */
export function crowdFrame(v: CrowdValue): string {
  const shape = (x: readonly number[]) => (v.mode === 'votes' || v.mode === 'centroid' ? x.map(asSent) : asSent(x[0] ?? 0));
  const zones = v.zones && Object.fromEntries(Object.entries(v.zones).map(([z, x]) => [z, { value: shape(x.value), n: x.n }]));
  return JSON.stringify({ op: SERVER_OP.crowd, lid: v.lid, mode: v.mode, value: shape(v.value), n: v.n, ...(v.sd !== undefined && { sd: asSent(v.sd) }), ...(zones && { zones }) });
}

/**
 * A crowd figure at the precision the displays get it (an OSC float32: at most 7 significant
 * digits), without the float noise of the arithmetic that made it: 0.30000000000000004 is 0.3, and a
 * standard deviation of 3.7e-9 among values from 0 to 1 is 0 (7 decimals, the float32 step near 1).
 */
export function asSent(x: number): number {
  return Number(Number(x.toFixed(7)).toPrecision(7));
}

/** The lids of the aggregated controls on a layout's active page. */
export function crowdLids(layout: LiveLayout): Set<number> {
  return new Set(layout.activeControls.filter((c) => c.aggregate).map((c) => c.lid));
}

/** The socket's token expires at `expiresAt` (ms since the epoch): renew it and send `refresh`. */
export function expiringFrame(expiresAt: number): string {
  return `{"op":"${SERVER_OP.expiring}","expiresAt":${expiresAt}}`;
}

/** The answer to `refresh`: the socket now holds the new token, which expires at `expiresAt`. */
export function refreshedFrame(expiresAt: number): string {
  return `{"op":"${SERVER_OP.refreshed}","expiresAt":${expiresAt}}`;
}

/** A light look from `at` on (ms, Redis's clock): its stream entry's id, its zone, and what it shows. */
export function lightFrame(id: string, at: number, look: LightLook): string {
  const { zone, ...shown } = look;
  return JSON.stringify({ op: SERVER_OP.light, id, zone, at, ...shown });
}

/** The answer to `time`: when the frame was received and this answer sent (ms since the epoch, Redis's clock, to the µs). */
export function timeFrame(ref: string, receivedAt: number, sentAt: number): string {
  return `${serverFramePrefix(SERVER_OP.time)},"ref":${JSON.stringify(ref)},"receivedAt":${receivedAt.toFixed(3)},"sentAt":${Math.max(receivedAt, sentAt).toFixed(3)}}`;
}
