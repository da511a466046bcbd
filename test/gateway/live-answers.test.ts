// The live channel's answers' queue on its own: a socket's answers of one turn go out in one cork,
// in order; one uWS drops is reported; and a write that throws stops neither the other sockets'
// answers nor the next turn's. The sockets here are plain objects with uWS's cork and send.
import { describe, expect, it } from 'vitest';
import { AnswerQueue, DROPPED } from '../../gateway/live/answers.js';
import type { LiveSocket, SocketData } from '../../gateway/live/socket.js';

interface Written {
  corks: string[][];
}

function socket(opts: { throws?: boolean; dropAfter?: number } = {}): { ws: LiveSocket; data: SocketData; written: Written } {
  const written: Written = { corks: [] };
  let current: string[] | null = null;
  let sends = 0;
  const ws = {
    cork(fn: () => void) {
      if (opts.throws) throw new Error('Invalid access of closed uWS.WebSocket/SSLWebSocket.');
      current = [];
      fn();
      written.corks.push(current);
      current = null;
    },
    send(text: string) {
      if (current === null) throw new Error('send outside a cork');
      current.push(text);
      return opts.dropAfter !== undefined && ++sends > opts.dropAfter ? DROPPED : 1;
    },
  };
  const data = { open: true, answers: [] as string[] } as unknown as SocketData;
  return { ws: ws as unknown as LiveSocket, data, written };
}

const turn = () => new Promise((r) => setImmediate(r));

describe('the answers queue', () => {
  it("writes a socket's answers of one turn in one cork, in order, and each socket's apart", async () => {
    const q = new AnswerQueue(() => {}, (e) => { throw e; });
    const a = socket();
    const b = socket();
    q.push(a.ws, a.data, 'a1');
    q.push(b.ws, b.data, 'b1');
    q.push(a.ws, a.data, 'a2');
    await turn();
    expect(a.written.corks).toEqual([['a1', 'a2']]);
    expect(b.written.corks).toEqual([['b1']]);
    q.push(a.ws, a.data, 'a3');
    await turn();
    expect(a.written.corks).toEqual([['a1', 'a2'], ['a3']]);
  });

  it('skips a socket closed before its turn, and reports one whose answer uWS dropped', async () => {
    const dropped: SocketData[] = [];
    const q = new AnswerQueue((_ws, data) => dropped.push(data), (e) => { throw e; });
    const closed = socket();
    const slow = socket({ dropAfter: 1 });
    q.push(closed.ws, closed.data, 'c1');
    closed.data.open = false;
    q.push(slow.ws, slow.data, 's1');
    q.push(slow.ws, slow.data, 's2');
    q.push(slow.ws, slow.data, 's3');
    await turn();
    expect(closed.written.corks).toEqual([]);
    expect(slow.written.corks).toEqual([['s1', 's2']]); // the rest of its turn is not written
    expect(dropped).toEqual([slow.data]);
  });

  it("still writes the other sockets' answers, this turn and the next, when one socket's write throws", async () => {
    const errors: unknown[] = [];
    const q = new AnswerQueue(() => {}, (e) => errors.push(e));
    const broken = socket({ throws: true });
    const fine = socket();
    q.push(broken.ws, broken.data, 'x1');
    q.push(fine.ws, fine.data, 'f1');
    await turn();
    expect(fine.written.corks).toEqual([['f1']]);
    expect(errors).toHaveLength(1);
    q.push(fine.ws, fine.data, 'f2');
    await turn();
    expect(fine.written.corks).toEqual([['f1'], ['f2']]);
    expect(errors).toHaveLength(1);
  });
});
