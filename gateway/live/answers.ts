// Answers (ack, error) to live sockets, written once per socket and turn of the event loop. One
// Redis reply of the action log stores a few hundred actions and tells their waiters in one loop;
// a socket with several actions in flight then gets all its answers corked into one write, not one
// write each (a syscall each, and on loopback the reader's wakeup too: most of an action's CPU).
import type { LiveSocket, SocketData } from './socket.js';

/** uWS's answer to a send dropped past maxBackpressure. */
export const DROPPED = 2;

export class AnswerQueue {
  private readonly queued = new Map<LiveSocket, { data: SocketData; texts: string[] }>();
  private scheduled = false;
  private readonly flush = () => this.flushNow();

  constructor(
    /** a socket whose answer uWS dropped past its limit: the channel closes it (CLOSE.tooSlow) */
    private readonly onDropped: (ws: LiveSocket, data: SocketData) => void,
  ) {}

  /**
   * Queues an answer; it goes out at the end of this turn (a microtask), with the socket's others.
   * `data` is the socket's own (uWS throws on any call to a closed socket, getUserData too).
   */
  push(ws: LiveSocket, data: SocketData, text: string): void {
    if (!data.open) return;
    const queued = this.queued.get(ws);
    if (queued) {
      queued.texts.push(text);
      return;
    }
    this.queued.set(ws, { data, texts: [text] });
    if (!this.scheduled) {
      this.scheduled = true;
      queueMicrotask(this.flush);
    }
  }

  private flushNow(): void {
    this.scheduled = false;
    const dropped: [LiveSocket, SocketData][] = [];
    for (const [ws, { data, texts }] of this.queued) {
      if (!data.open) continue; // closed meanwhile: the close handler marks it
      ws.cork(() => {
        for (const text of texts) {
          if (ws.send(text) === DROPPED) return void dropped.push([ws, data]);
        }
      });
    }
    this.queued.clear();
    for (const [ws, data] of dropped) this.onDropped(ws, data);
  }
}
