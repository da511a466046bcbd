// Answers (ack, error) to live sockets, written once per socket and turn of the event loop. One
// Redis reply of the action log stores a few hundred actions and tells their waiters in one loop;
// a socket with several actions in flight then gets all its answers corked into one write, not one
// write each (a syscall each, and on loopback the reader's wakeup too: most of an action's CPU).
// A socket's answers wait in its own SocketData.answers, so queueing one allocates nothing beyond
// the answer's text.
import type { LiveSocket, SocketData } from './socket.js';

/** uWS's answer to a send dropped past maxBackpressure. */
export const DROPPED = 2;

export class AnswerQueue {
  /** the sockets with answers waiting, in the order their first answer came (data[i] is sockets[i]'s) */
  private readonly sockets: LiveSocket[] = [];
  private readonly data: SocketData[] = [];
  private scheduled = false;
  private readonly flush = () => this.flushNow();
  /** the socket being written inside its cork, and whether uWS dropped one of its answers */
  private writing: SocketData | null = null;
  private writingTo: LiveSocket | null = null;
  private dropped = false;
  private readonly writeAll = () => {
    const ws = this.writingTo!;
    for (const text of this.writing!.answers) {
      if (ws.send(text) === DROPPED) return void (this.dropped = true);
    }
  };

  constructor(
    /** a socket whose answer uWS dropped past its limit: the channel closes it (CLOSE.tooSlow) */
    private readonly onDropped: (ws: LiveSocket, data: SocketData) => void,
    /** a write that threw (a bug: uWS throws on a socket it closed): logged; the other sockets' answers still go */
    private readonly onError: (e: unknown) => void,
  ) {}

  /**
   * Queues an answer; it goes out at the end of this turn (a microtask), with the socket's others.
   * `data` is the socket's own (uWS throws on any call to a closed socket, getUserData too).
   */
  push(ws: LiveSocket, data: SocketData, text: string): void {
    if (!data.open) return;
    if (data.answers.length === 0) {
      this.sockets.push(ws);
      this.data.push(data);
      if (!this.scheduled) {
        this.scheduled = true;
        queueMicrotask(this.flush);
      }
    }
    data.answers.push(text);
  }

  private flushNow(): void {
    this.scheduled = false;
    // answers queued while these are written (none today) wait for the next flush
    const n = this.sockets.length;
    const dropped: [LiveSocket, SocketData][] = [];
    for (let i = 0; i < n; i++) {
      const ws = this.sockets[i]!;
      const data = this.data[i]!;
      if (data.open) {
        // closed meanwhile: the close handler marks it, and its answers are dropped with it
        this.writingTo = ws;
        this.writing = data;
        this.dropped = false;
        try {
          ws.cork(this.writeAll);
        } catch (e) {
          this.onError(e);
        }
        if (this.dropped) dropped.push([ws, data]);
      }
      data.answers.length = 0;
    }
    this.writing = this.writingTo = null;
    this.sockets.splice(0, n);
    this.data.splice(0, n);
    for (const [ws, data] of dropped) this.onDropped(ws, data);
  }
}
