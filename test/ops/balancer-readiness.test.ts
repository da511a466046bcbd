// A gateway that loses Redis (its link cut by a proxy: /readyz 503) leaves the balancer's rotation
// while the other serves every request, and comes back once Redis does. Debian's HAProxy with
// deploy/haproxy/audience-control.cfg checks each gateway's /readyz (active); Debian's nginx with
// deploy/nginx/audience-control.conf has no active check, so the gateway's own 503 to a request
// that needs Redis takes it out: nginx answers that request from the other gateway
// (proxy_next_upstream http_503) and sends the one that failed nothing for fail_timeout. Both
// files run as shipped, with only the certificate, the listen address and the gateways' ports
// changed.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../dev/redis-server.js';
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
const ports = { HAProxy: 0, nginx: 0 };
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
  const dir = mkdtempSync(join(tmpdir(), 'ac-balancers-'));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '2', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], { stdio: 'ignore' });
  cert = readFileSync(join(dir, 'cert.pem'));
  const upstreams = (text: string) =>
    text
      .replace('127.0.0.1:8080', `127.0.0.1:${sick.port}`)
      .replace('127.0.0.1:8081', `127.0.0.1:${well.port}`)
      .replace('check port 9464', `check port ${sick.opsPort}`)
      .replace('check port 9465', `check port ${well.opsPort}`);
  writeFileSync(join(dir, 'audience.pem'), Buffer.concat([cert, readFileSync(join(dir, 'key.pem'))]));
  ports.HAProxy = await freePort();
  const cfg = upstreams(readFileSync('deploy/haproxy/audience-control.cfg', 'utf8'))
    .replace('/etc/ssl/audience/audience.pem', join(dir, 'audience.pem'))
    .replace('bind :443', `bind 127.0.0.1:${ports.HAProxy}`);
  writeFileSync(join(dir, 'haproxy.cfg'), cfg);
  children.push(spawn('haproxy', ['-db', '-f', join(dir, 'haproxy.cfg')], { stdio: 'ignore' }));
  ports.nginx = await freePort();
  const site = upstreams(readFileSync('deploy/nginx/audience-control.conf', 'utf8'))
    .replace('/etc/ssl/audience/fullchain.pem', join(dir, 'cert.pem'))
    .replace('/etc/ssl/audience/privkey.pem', join(dir, 'key.pem'))
    .replace('listen 443 ssl;', `listen 127.0.0.1:${ports.nginx} ssl;`)
    .replace('listen [::]:443 ssl;', '');
  writeFileSync(join(dir, 'site.conf'), site);
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `${t}_temp_path ${join(dir, t)};`).join(' ');
  writeFileSync(join(dir, 'nginx.conf'), `error_log ${join(dir, 'error.log')}; pid ${join(dir, 'nginx.pid')};\nevents { worker_connections 1024; }\nhttp { access_log off; ${temp} include ${join(dir, 'site.conf')}; }\n`);
  children.push(spawn('nginx', ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off; master_process off;'], { stdio: 'ignore' }));
}, 60_000);
afterAll(async () => {
  for (const c of children) await stopProcess(c, 'SIGKILL');
  await link?.stop();
});

/** GET /layout through a balancer (token-less: spread over the gateways at random); its status. */
const discover = (port: number) =>
  new Promise<number>((resolve, reject) => {
    const r = request({ host: '127.0.0.1', port, servername: 'localhost', ca: cert, path: `/layout/${DEMO_LAYOUT.layoutId}`, agent: false, headers: { 'x-api-key': apiKey } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    r.on('error', reject);
    r.end();
  });
/** The requests a gateway answered so far, by its metrics (a 503 among them). */
const answered = async (g: GatewayProcess) => [...(await scrape(g.opsPort)).matchAll(/^audience_gateway_http_requests_total\{[^}]*\} (\S+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
const readyz = async (g: GatewayProcess) => (await fetch(`http://127.0.0.1:${g.opsPort}/readyz`)).status;

describe.each([
  // two failed checks a second apart, and a margin; none reaches the gateway without Redis
  ['HAProxy', "checks each gateway's /readyz", { settleMs: 3500, reaching: 0, backMs: 15_000 }],
  // the first request it gets after the cut is answered 503 and taken by the other; then none for fail_timeout (10 s)
  ['nginx', "takes a gateway's 503 for a failure", { settleMs: 0, reaching: 1, backMs: 25_000 }],
] as const)('%s %s', (balancer, _how, { settleMs, reaching, backMs }) => {
  it('sends no new request to a gateway that lost Redis once it knows; the other serves every one; it is back after Redis is', async () => {
    const discoverHere = () => discover(ports[balancer]);
    // both in rotation: 40 token-less requests reach both
    await eventually(async () => (await discoverHere().catch(() => 0)) === 200, 10_000);
    await eventually(async () => {
      const before = await answered(sick);
      for (let i = 0; i < 20; i++) expect(await discoverHere()).toBe(200);
      return (await answered(sick)) > before;
    }, 15_000);
    link.cut();
    await eventually(async () => (await readyz(sick)) === 503, 10_000);
    await new Promise((r) => setTimeout(r, settleMs));
    const out = [await answered(sick), await answered(well)];
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) statuses.push(await discoverHere());
    expect(statuses.every((s) => s === 200), JSON.stringify(statuses)).toBe(true);
    expect((await answered(sick)) - out[0]!, 'requests that reached the gateway without Redis').toBeLessThanOrEqual(reaching);
    expect((await answered(well)) - out[1]!).toBeGreaterThanOrEqual(40);
    link.restore();
    await eventually(async () => (await readyz(sick)) === 200, 15_000);
    const back = await answered(sick);
    await eventually(async () => {
      for (let i = 0; i < 10; i++) expect(await discoverHere()).toBe(200);
      return (await answered(sick)) > back;
    }, backMs);
  }, 90_000);
});
