// A layout's DMX target as the bridge runs it: its wire (framing.ts) and its lane (dmx-lane.ts),
// named as metrics and the display health rows name it, its send errors logged at most every 5 s.
import { Counter, type Registry } from 'prom-client';
import type { Logger } from '../../runtime/log.js';
import type { DmxTarget } from '../config.js';
import { DmxLane, type DmxCounters } from './dmx-lane.js';
import { DmxWire, sourceCid } from './framing.js';
import { dmxTargetName } from './names.js';

const LOG_EVERY_MS = 5000;

export function dmxLane(bridgeId: string, t: DmxTarget, now: () => number, log: Logger): DmxLane {
  const name = dmxTargetName(t);
  const universe = t.transport === 'sacn' ? { transport: 'sacn' as const, universe: t.universe, priority: t.priority, sourceName: t.sourceName } : { transport: 'artnet' as const, portAddress: t.universe };
  const wire = new DmxWire(universe, { address: t.address, interface: t.interface }, sourceCid(bridgeId, name));
  let loggedAt = -Infinity;
  return new DmxLane({ name, terminates: t.transport === 'sacn', rateHz: t.rateHz, staleMs: t.staleMs, routes: t.routes }, wire, now, (e) => {
    if (Date.now() - loggedAt < LOG_EVERY_MS) return;
    loggedAt = Date.now();
    log.warn({ target: name, err: (e as Error).message }, 'a DMX frame could not be sent; the next frame tries again');
  });
}

/** Each DMX universe's frames, changed channels, stale holds and send errors, by layout and universe (its target name). */
export function registerDmxMetrics(registry: Registry, layouts: readonly { layoutId: string; dmx: readonly DmxLane[] }[]): void {
  const per: [keyof DmxCounters, string, string][] = [
    ['frames', 'audience_bridge_dmx_frames_total', 'DMX frames sent, by layout and universe (rateHz a second while the universe is sent).'],
    ['channelsChanged', 'audience_bridge_dmx_channels_changed_total', 'Channel values that differed from the frame before, by layout and universe.'],
    ['staleHolds', 'audience_bridge_dmx_stale_total', 'Times a crowd route went stale (no summary of its control for staleMs) and its stale policy took over, by layout and universe.'],
    ['sendErrors', 'audience_bridge_dmx_send_errors_total', 'DMX frames the network refused to send, by layout and universe.'],
  ];
  for (const [field, name, help] of per) {
    new Counter({ name, help, labelNames: ['layout', 'universe'], registers: [registry], collect() {
      this.reset();
      for (const l of layouts) for (const d of l.dmx) this.labels(l.layoutId, d.name).inc(d.counters[field]);
    } });
  }
}
