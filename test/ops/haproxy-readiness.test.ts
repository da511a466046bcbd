// Debian's HAProxy with deploy/haproxy/audience-control.cfg (only the certificate, the listen address
// and the gateways' ports changed) checks each gateway's /readyz: a gateway that loses Redis (its
// link cut by a proxy: /readyz 503) gets no new request after its checks fail, while the other
// serves; once Redis is back it gets requests again.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../gateway/dev/redis-server.js';
import { stopProcess } from '../helpers/bridge.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { DEMO_LAYOUT, eventually } from '../helpers/gateway.js';
import { seedLayout, spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { scrape } from '../helpers/metrics.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';

const redis = useRedis();
const children: ChildProcess[] = [];
let link: FaultProxy;
let sick: GatewayProcess;
let well: GatewayProcess;
let port = 0;
let cert: Buffer;
let apiKey = '';

beforeAll(async () => {
  const prefix = randomPrefix();
  const seeded = await seedLayout(redis.get().server.url, prefix, DEMO_LAYOUT);
  apiKey = seeded.apiKey;
  seeded.admin.disconnect();
  // one gateway reaches Redis through a link the test can cut
  link = new FaultProxy({ targets: () => [Number(new URL(redis.get().server.url).port)] });
  const linkPort = await link.start();
  sick = await spawnGateway({ REDIS_URL: `redis://127.0.0.1:${linkPort}`, REDIS_PREFIX: prefix, TRUST_PROXY: '127.0.0.1' });
  well = await spawnGateway({ REDIS_URL: redis.get().server.url, REDIS_PREFIX: prefix, TRUST_PROXY: '127.0.0.1' });
  children.push(sick.child, well.child);
  const dir = mkdtempSync(join(tmpdir(), 'ac-haproxy-'));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '2', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], { stdio: 'ignore' });
  cert = readFileSync(join(dir, 'cert.pem'));
  writeFileSync(join(dir, 'audience.pem'), Buffer.concat([cert, readFileSync(join(dir, 'key.pem'))]));
  port = await freePort();
  const cfg = readFileSync('deploy/haproxy/audience-control.cfg', 'utf8')
    .replace('/etc/ssl/audience/audience.pem', join(dir, 'audience.pem'))
    .replace('bind :443', `bind 127.0.0.1:${port}`)
    .replace('127.0.0.1:8080', `127.0.0.1:${sick.port}`)
    .replace('127.0.0.1:8081', `127.0.0.1:${well.port}`)
    .replace('check port 9464', `check port ${sick.opsPort}`)
    .replace('check port 9465', `check port ${well.opsPort}`);
  writeFileSync(join(dir, 'haproxy.cfg'), cfg);
  children.push(spawn('haproxy', ['-db', '-f', join(dir, 'haproxy.cfg')], { stdio: 'ignore' }));
}, 60_000);
afterAll(async () => {
  for (const c of children) await stopProcess(c, 'SIGKILL');
  await link?.stop();
});

/** GET /layout through HAProxy (token-less: spread over the gateways at random); its status. */
const discover = () =>
  new Promise<number>((resolve, reject) => {
    const r = request({ host: '127.0.0.1', port, servername: 'localhost', ca: cert, path: `/layout/${DEMO_LAYOUT.layoutId}`, agent: false, headers: { 'x-api-key': apiKey } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    r.on('error', reject);
    r.end();
  });
/** The requests a gateway answered so far, by its metrics. */
const answered = async (g: GatewayProcess) => [...(await scrape(g.opsPort)).matchAll(/^audience_gateway_http_requests_total\{[^}]*\} (\S+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
const readyz = async (g: GatewayProcess) => (await fetch(`http://127.0.0.1:${g.opsPort}/readyz`)).status;

describe("HAProxy checks each gateway's /readyz", () => {
  it('sends no new request to a gateway that lost Redis, once its checks fail; the other serves every one; it is back after Redis is', async () => {
    // both in rotation: 40 token-less requests reach both
    await eventually(async () => (await discover().catch(() => 0)) === 200, 10_000);
    const before = [await answered(sick), await answered(well)];
    for (let i = 0; i < 40; i++) expect(await discover()).toBe(200);
    expect((await answered(sick)) - before[0]!, 'the gateway that will lose Redis served some').toBeGreaterThan(0);
    link.cut();
    await eventually(async () => (await readyz(sick)) === 503, 10_000);
    // two failed checks a second apart, and a margin
    await new Promise((r) => setTimeout(r, 3500));
    const out = [await answered(sick), await answered(well)];
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) statuses.push(await discover());
    expect(statuses.every((s) => s === 200), JSON.stringify(statuses)).toBe(true);
    expect((await answered(sick)) - out[0]!, 'requests that reached the gateway without Redis').toBe(0);
    expect((await answered(well)) - out[1]!).toBeGreaterThanOrEqual(40);
    link.restore();
    await eventually(async () => (await readyz(sick)) === 200, 15_000);
    const back = await answered(sick);
    await eventually(async () => {
      for (let i = 0; i < 10; i++) await discover();
      return (await answered(sick)) > back;
    }, 15_000);
  }, 60_000);
});
