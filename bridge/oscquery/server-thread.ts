// The OSCQuery server's own thread (a worker_threads Worker started by service.ts): HTTP and
// WebSocket clients are served here, off the send loop's event loop, so a flood of requests cannot
// make a tick late. The thread names itself `oscquery` (/proc/<pid>/task/<tid>/comm), and like every
// helper thread it yields to the send path (thread-priority.ts). Messages (ThreadMessage): the
// namespace and what was played come in; the port, client counts and errors go out.
import { writeFileSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import type { Method } from './namespace.js';
import { startOscQueryServer, type OscQueryServer, type PlayedMessage } from './server.js';

export type ServerOptions = Omit<Parameters<typeof startOscQueryServer>[0], 'onError' | 'onClients'>;

/** What the bridge's main thread sends. */
export type ToThread =
  | { op: 'namespace'; methods: [string, Method][] }
  | { op: 'played'; batch: [string, PlayedMessage[]][] }
  | { op: 'close' };

/** What this thread sends back. */
export type FromThread =
  | { op: 'listening'; port: number }
  | { op: 'failed'; message: string }
  | { op: 'error'; message: string }
  | { op: 'clients'; count: number }
  | { op: 'closed' };

const port = parentPort!;
const tell = (m: FromThread) => port.postMessage(m);
try {
  writeFileSync('/proc/thread-self/comm', 'oscquery');
} catch {
  // not Linux, or /proc not mounted: the thread keeps its name
}

let server: OscQueryServer | null = null;
startOscQueryServer({ ...(workerData as ServerOptions), onError: (e) => tell({ op: 'error', message: e.message }), onClients: (count) => tell({ op: 'clients', count }) }).then(
  (s) => {
    server = s;
    tell({ op: 'listening', port: s.port });
  },
  (e: unknown) => tell({ op: 'failed', message: (e as Error).message }),
);

port.on('message', (m: ToThread) => {
  if (m.op === 'namespace') server?.setNamespace(new Map(m.methods));
  else if (m.op === 'played') for (const [source, messages] of m.batch) server?.played(source, messages);
  else
    void Promise.resolve(server?.close()).then(() => {
      tell({ op: 'closed' });
      port.close();
    });
});
