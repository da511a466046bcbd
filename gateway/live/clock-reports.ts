// How well the phones' clocks are synced: each `time` exchange carries the client's current
// uncertainty (half the least round trip it uses). Each report is observed in a Prometheus
// histogram per layout and zone; each socket keeps its latest, and clockSnapshot counts a layout's
// sockets by those, per zone, in CLOCK_BUCKETS_MS: what the team page's sync panel adds up across
// processes (store/clock-figures.ts). A phone without a zone counts as zone *.
import { CLOCK_BUCKETS_MS } from '../store/clock-figures.js';
import type { SocketData } from './socket.js';

/** The zone a socket's figures count in. */
export const clockZoneOf = (data: SocketData): string => data.claims.zone ?? '*';

/** A layout's sockets per zone, counted by their latest report into CLOCK_BUCKETS_MS (and one past). Sockets yet to report are not counted. */
export function clockSnapshot(sockets: Iterable<SocketData>): Record<string, number[]> {
  const zones: Record<string, number[]> = {};
  for (const data of sockets) {
    if (data.clockMs === null) continue;
    const counts = (zones[clockZoneOf(data)] ??= new Array<number>(CLOCK_BUCKETS_MS.length + 1).fill(0));
    let i = 0;
    while (i < CLOCK_BUCKETS_MS.length && data.clockMs > CLOCK_BUCKETS_MS[i]!) i++;
    counts[i]!++;
  }
  return zones;
}
