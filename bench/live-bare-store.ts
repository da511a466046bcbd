// The storing floor's one addition to the bare socket ack (live-bare-uws.ts with BARE_STORE_URL):
// each frame's text is appended to one Redis stream, as its own entry, before the frame is acked.
// It is the least code that does that job well: the frames of one event-loop turn go out as one
// Lua call (an XADD each, one trim), at most two calls in flight, and once a call is answered the
// acks of its frames are written socket by socket, each socket's in one corked write. Nothing is
// checked, and the entry is the frame as it came.
import { Redis } from 'ioredis';

/** Every frame of the call appended, then the stream trimmed once (as the gateway's appendActions). */
const APPEND_EACH = `for i = 2, #ARGV do redis.call('XADD', KEYS[1], '*', 'frame', ARGV[i]) end
redis.call('XTRIM', KEYS[1], 'MAXLEN', '~', ARGV[1])
return #ARGV - 1`;
const MAX_LEN = 100_000;
const MAX_BATCH = 256;
const MAX_IN_FLIGHT = 2;

type StoreClient = Redis & { appendEach(key: string, maxLen: number, ...texts: string[]): Promise<number> };

export class FrameStore<W> {
  private readonly redis: StoreClient;
  private texts: string[] = [];
  private waiting: W[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    url: string,
    private readonly key: string,
    /** the frames of one call are stored: their acks go out */
    private readonly stored: (waiting: readonly W[]) => void,
  ) {
    this.redis = new Redis(url, { protocol: 2 }) as StoreClient; // as the gateway's clients speak
    this.redis.defineCommand('appendEach', { numberOfKeys: 1, lua: APPEND_EACH });
  }

  /** Stores a frame's text; `who` is told, in `stored`, once it is in the stream. */
  add(text: string, who: W): void {
    this.texts.push(text);
    this.waiting.push(who);
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= MAX_IN_FLIGHT) return;
    this.scheduled = true;
    setImmediate(this.flush);
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    while (this.inFlight < MAX_IN_FLIGHT && this.texts.length > 0) {
      const texts = this.texts.splice(0, MAX_BATCH);
      const waiting = this.waiting.splice(0, texts.length);
      this.inFlight++;
      this.redis.appendEach(this.key, MAX_LEN, ...texts).then(
        () => {
          this.inFlight--;
          this.stored(waiting);
          if (this.texts.length > 0) this.schedule();
        },
        (e: unknown) => {
          // a floor that cannot store is no floor: the bench that runs it fails
          process.stderr.write(`live-bare-uws: the store failed: ${String(e)}\n`);
          process.exit(1);
        },
      );
    }
  };
}
