// The live sockets this process holds, by layout and by participant: a participant (a token's
// `sub`) holds at most socketsPerParticipant of them, and a new one past that replaces its oldest
// (CLOSE.replaced); every close the gateway makes goes through `end`, so it is counted once; and a stopping
// gateway's drain, which spreads the closes (CLOSE.serviceRestart) and the returns they ask for over drainMs.
import { CLOSE, type RestartReason } from '../../schemas/live-protocol.js';
import type { LiveSocket, SocketData } from './socket.js';

export interface RegistryEvents {
  /** the first socket of a layout on this process opened */
  layoutWatched: (layoutId: string) => void;
  /** the last socket of a layout on this process closed */
  layoutLeft: (layoutId: string) => void;
  /** a socket the gateway closed, with the code */
  closedByUs: (code: number) => void;
}

/** A drain closes its sockets in steps this far apart. */
const DRAIN_STEP_MS = 50;

export class SocketRegistry {
  /** the open sockets, by layout, each with its data (no native call to read it) */
  private readonly byLayout = new Map<string, Map<LiveSocket, SocketData>>();
  /** each participant's open sockets, oldest first */
  private readonly bySub = new Map<string, [LiveSocket, SocketData][]>();
  private held = 0;

  constructor(
    private readonly perParticipant: number,
    private readonly events: RegistryEvents,
  ) {}

  /** Sockets open now. */
  get size(): number {
    return this.held;
  }

  /** A socket opened; a participant past its cap loses its oldest socket (CLOSE.replaced). */
  add(ws: LiveSocket, data: SocketData): void {
    this.held++;
    let sockets = this.byLayout.get(data.layoutId);
    if (!sockets) {
      this.byLayout.set(data.layoutId, (sockets = new Map<LiveSocket, SocketData>()));
      this.events.layoutWatched(data.layoutId);
    }
    sockets.set(ws, data);
    const own = this.bySub.get(data.claims.sub);
    if (!own) return void this.bySub.set(data.claims.sub, [[ws, data]]);
    own.push([ws, data]);
    // the oldest leave the list now; their close handler finds them gone
    while (own.length > this.perParticipant) {
      const [oldest, d] = own.shift()!;
      this.end(oldest, d, CLOSE.replaced, 'a newer socket of this participant took its place');
    }
  }

  /** A socket closed (by either side). */
  remove(ws: LiveSocket, data: SocketData): void {
    this.held--;
    data.open = false;
    const sockets = this.byLayout.get(data.layoutId);
    sockets?.delete(ws);
    if (sockets?.size === 0) {
      this.byLayout.delete(data.layoutId);
      this.events.layoutLeft(data.layoutId);
    }
    const own = this.bySub.get(data.claims.sub);
    const at = own?.findIndex(([s]) => s === ws) ?? -1;
    if (at >= 0) own!.splice(at, 1);
    if (own?.length === 0) this.bySub.delete(data.claims.sub);
  }

  /** Whether the participant holds a socket of the layout here. */
  hasParticipant(layoutId: string, sub: string): boolean {
    return this.bySub.get(sub)?.some(([, d]) => d.layoutId === layoutId) ?? false;
  }

  /** Closes the participant's sockets of the layout with `code` (another process holds the participant now). */
  endParticipant(layoutId: string, sub: string, code: number, reason: string): void {
    for (const [ws, d] of [...(this.bySub.get(sub) ?? [])]) if (d.layoutId === layoutId) this.end(ws, d, code, reason);
  }

  /** The sockets of a layout, live, not copied (collect before closing any of them). */
  ofLayout(layoutId: string): Iterable<[LiveSocket, SocketData]> {
    return this.byLayout.get(layoutId) ?? [];
  }

  /** The layouts with a socket here. */
  layouts(): string[] {
    return [...this.byLayout.keys()];
  }

  hasLayout(layoutId: string): boolean {
    return this.byLayout.has(layoutId);
  }

  /** Every socket, layout by layout (live iteration: collect before closing). */
  *all(): IterableIterator<[LiveSocket, SocketData]> {
    for (const sockets of this.byLayout.values()) yield* sockets;
  }

  /**
   * Calls `visit` for every socket, layout by layout (collect before closing). For a pass over
   * every socket each second: iterating all(), a generator, cost five times as much (12,500
   * sockets, Node 20, 2026-11-28: 366 µs a pass against 72).
   */
  forEach(visit: (ws: LiveSocket, data: SocketData) => void): void {
    for (const sockets of this.byLayout.values()) sockets.forEach((data, ws) => visit(ws, data));
  }

  /** Closes a socket with a code that tells its client what to do; once. */
  end(ws: LiveSocket, data: SocketData, code: number, reason: string): void {
    if (!data.open) return;
    data.open = false;
    this.events.closedByUs(code);
    ws.end(code, reason);
  }

  /** Closes every socket whose data matches. */
  endWhere(match: (data: SocketData) => boolean, code: number, reason: string): void {
    for (const [ws, data] of [...this.all()]) if (match(data)) this.end(ws, data, code, reason);
  }

  /**
   * A stopping gateway's sockets, closed with CLOSE.serviceRestart in steps over `drainMs`, each with a reason
   * `{"retryAfterMs":N}`, N uniform within its step, so that the returns are spread over the same
   * window as the closes, not bunched at each step. Resolves once all are closed.
   */
  async drain(drainMs: number, random: () => number = Math.random): Promise<void> {
    const all = [...this.all()];
    const steps = Math.max(1, Math.floor(drainMs / DRAIN_STEP_MS));
    const stepMs = drainMs / steps;
    for (let step = 0; step < steps && all.length > 0; step++) {
      const share = Math.ceil(all.length / (steps - step));
      for (const [ws, data] of all.splice(0, share)) {
        const reason: RestartReason = { retryAfterMs: Math.floor(random() * stepMs) };
        this.end(ws, data, CLOSE.serviceRestart, JSON.stringify(reason));
      }
      if (all.length > 0) await new Promise((r) => setTimeout(r, stepMs));
    }
  }
}
