// The ops endpoints of a process, on their own port (loopback by default): /metrics for
// Prometheus, /healthz (the process answers), /readyz (its dependencies are there).
import { createServer, type Server } from 'node:http';
import { collectDefaultMetrics, type Registry } from 'prom-client';

/**
 * prom-client's process and Node.js metrics, less the three gauges it names `*_total`
 * (nodejs_active_{handles,requests,resources}_total), which `promtool check metrics` rejects;
 * the same counts stay available per type in the gauges without the suffix.
 */
export function collectProcessMetrics(registry: Registry, prefix: string): void {
  collectDefaultMetrics({ register: registry, prefix });
  for (const kind of ['handles', 'requests', 'resources']) registry.removeSingleMetric(`${prefix}nodejs_active_${kind}_total`);
}

export interface OpsServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * `ready`: why the process is not ready (503), or null. `note`: what is worth knowing but does not
 * stop it serving (a clock far from Redis's, which it corrects), said after "ready" in the 200.
 */
export async function startOpsServer(host: string, port: number, registry: Registry, ready: () => Promise<string | null>, note: () => string | null = () => null): Promise<OpsServer> {
  const server: Server = createServer((req, res) => {
    const reply = (status: number, type: string, body: string) => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(body);
    };
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET') return reply(405, 'text/plain', 'GET only\n');
    if (path === '/metrics') {
      registry.metrics().then(
        (text) => reply(200, registry.contentType, text),
        (e: unknown) => reply(500, 'text/plain', `metrics failed: ${String(e)}\n`),
      );
    } else if (path === '/healthz') {
      reply(200, 'text/plain', 'ok\n');
    } else if (path === '/readyz') {
      ready().then(
        (problem) => {
          if (problem !== null) return reply(503, 'text/plain', `not ready: ${problem}\n`);
          const said = note();
          reply(200, 'text/plain', said === null ? 'ready\n' : `ready; note: ${said}\n`);
        },
        (e: unknown) => reply(503, 'text/plain', `not ready: ${String(e)}\n`),
      );
    } else reply(404, 'text/plain', 'not found\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : port,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
