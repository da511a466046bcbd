// A DMX target's name in metrics, logs and the display health rows: sacn:<universe> or
// artnet:<net>.<subnet>.<universe>, with @<address> when it is sent unicast.
import { artnetName } from './framing.js';

export function dmxTargetName(t: { transport: 'sacn' | 'artnet'; universe: number; address?: string }): string {
  return `${t.transport}:${t.transport === 'sacn' ? t.universe : artnetName(t.universe)}${t.address === undefined ? '' : `@${t.address}`}`;
}
