// Debian's nginx with deploy/nginx/audience-control.conf, and Debian's HAProxy with
// deploy/haproxy/audience-control.cfg (only the certificate, the listen address and the gateways'
// ports changed), each in front of the same two audience-gateway processes, over TLS with a
// self-signed certificate: discovery, minting and actions; one participant's actions and live
// socket stay on one process while token-less requests spread; the live channel over wss:// (page,
// ack, a page switch, crowd frames, a revocation closing the socket, a socket idle past the
// gateway's ping interval kept open); the client's own address reaches the gateways
// (TRUST_PROXY), and a client's forged X-Forwarded-For does not.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LayoutDefinition } from '../../schemas/types.js';
import { createStores } from '../../gateway/store/stores.js';
import { freePort } from '../../dev/redis-server.js';
import { stopProcess } from '../helpers/bridge.js';
import { seedLayout, spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { eventually } from '../helpers/gateway.js';
import { liveProtocols } from '../helpers/live.js';
import { sample, scrape } from '../helpers/metrics.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';

const NGINX = 'deploy/nginx/audience-control.conf';
const HAPROXY = 'deploy/haproxy/audience-control.cfg';
const LAYOUT: LayoutDefinition = {
  layoutId: 'lb-show',
  name: 'Behind nginx',
  activePageId: 'main',
  pages: [
    { pageId: 'main', name: 'Main', controls: [
      { lid: 1, address: '/001', type: 'Button', props: { label: 'Cheer' } },
      { lid: 4, address: '/004', type: 'Index', props: { label: 'Colour' }, options: [{ index: 0, label: 'Red' }, { index: 1, label: 'Green' }], aggregate: { mode: 'votes', windowMs: 60_000 } },
    ] },
    { pageId: 'encore', name: 'Encore', controls: [{ lid: 7, address: '/007', type: 'Button', props: { label: 'Confetti' } }] },
  ],
};

const redis = useRedis();
const prefix = randomPrefix();
const children: ChildProcess[] = [];
const gateways: GatewayProcess[] = [];
let cert: Buffer;
/** each load balancer: its name, its TLS port, its file, and the loopback addresses its clients come from */
const balancers: { name: string; port: number; file: string; from: [string, string, string] }[] = [];
let apiKey: string;
/** 2.5 x LIVE_IDLE_TIMEOUT_SECONDS: a socket whose pongs did not pass is closed well within it */
const IDLE_MS = 20_000;
interface IdleSocket {
  wss: Wss;
  openedAt: number;
  closedWith: number | null;
}
/** each balancer's socket that the app leaves idle, by its name */
const idleSockets = new Map<string, IdleSocket>();

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ac-nginx-'));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '2', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], { stdio: 'ignore' });
  cert = readFileSync(join(dir, 'cert.pem'));
  const seeded = await seedLayout(redis.get().server.url, prefix, LAYOUT);
  apiKey = seeded.apiKey;
  const stores = createStores(seeded.admin, prefix);
  const team = (await stores.layouts.get(LAYOUT.layoutId))!.teamId;
  await stores.admins.create(team, 'lb@team.example', 'stage-door-1234');
  seeded.admin.disconnect();
  const ports = [await freePort(), await freePort()];
  for (const p of ports) {
    const g = await spawnGateway({ REDIS_URL: redis.get().server.url, REDIS_PREFIX: prefix, PORT: String(p), TRUST_PROXY: '127.0.0.1', LIVE_IDLE_TIMEOUT_SECONDS: '8', ADMIN_LOGIN_MAX_PER_ADDRESS: '3' });
    children.push(g.child);
    gateways.push(g);
  }
  const ready = (p: number) =>
    eventually(() => new Promise<boolean>((resolve) => {
      const c = connect(p, '127.0.0.1', () => (c.destroy(), resolve(true)));
      c.on('error', () => resolve(false));
    }), 10_000);
  // the shipped files, with only the certificate, the listen address and the gateways' ports changed
  const upstreams = (text: string) =>
    text
      .replace('127.0.0.1:8080', `127.0.0.1:${ports[0]}`)
      .replace('127.0.0.1:8081', `127.0.0.1:${ports[1]}`)
      .replace('check port 9464', `check port ${gateways[0]!.opsPort}`)
      .replace('check port 9465', `check port ${gateways[1]!.opsPort}`);
  const nginxPort = await freePort();
  const site = upstreams(readFileSync(NGINX, 'utf8'))
    .replace('/etc/ssl/audience/fullchain.pem', join(dir, 'cert.pem'))
    .replace('/etc/ssl/audience/privkey.pem', join(dir, 'key.pem'))
    .replace('listen 443 ssl;', `listen 127.0.0.1:${nginxPort} ssl;`)
    .replace('listen [::]:443 ssl;', '');
  writeFileSync(join(dir, 'site.conf'), site);
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `${t}_temp_path ${join(dir, t)};`).join(' ');
  writeFileSync(join(dir, 'nginx.conf'), `error_log ${join(dir, 'error.log')}; pid ${join(dir, 'nginx.pid')};\nevents { worker_connections 1024; }\nhttp { access_log off; ${temp} include ${join(dir, 'site.conf')}; }\n`);
  children.push(spawn('nginx', ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off; master_process off;'], { stdio: 'ignore' }));
  await ready(nginxPort);
  balancers.push({ name: 'nginx', port: nginxPort, file: NGINX, from: ['127.0.0.2', '127.0.0.3', '127.0.0.4'] });
  const haproxyPort = await freePort();
  writeFileSync(join(dir, 'audience.pem'), Buffer.concat([cert, readFileSync(join(dir, 'key.pem'))]));
  const cfg = upstreams(readFileSync(HAPROXY, 'utf8')).replace('/etc/ssl/audience/audience.pem', join(dir, 'audience.pem')).replace('bind :443', `bind 127.0.0.1:${haproxyPort}`);
  writeFileSync(join(dir, 'haproxy.cfg'), cfg);
  children.push(spawn('haproxy', ['-db', '-f', join(dir, 'haproxy.cfg')], { stdio: 'ignore' }));
  await ready(haproxyPort);
  balancers.push({ name: 'HAProxy', port: haproxyPort, file: HAPROXY, from: ['127.0.0.5', '127.0.0.6', '127.0.0.7'] });
  // each balancer's idle socket opens now and is looked at in its own test, IDLE_MS after it opened:
  // the other tests run meanwhile instead of the file waiting twice
  for (const lb of balancers) {
    const wss = await openWss(lb, await mint(lb));
    const socket: IdleSocket = { wss, openedAt: Date.now(), closedWith: null };
    void wss.closed.then((code) => (socket.closedWith = code));
    idleSockets.set(lb.name, socket);
  }
}, 60_000);
afterAll(async () => {
  for (const c of children) await stopProcess(c, 'SIGKILL');
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
}

type Balancer = (typeof balancers)[number];

/** An HTTPS request through a load balancer, trusting its certificate, from `from` (a loopback address). */
function https(lb: Balancer, method: string, path: string, body?: unknown, headers: Record<string, string> = {}, from = '127.0.0.1'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = request({ host: '127.0.0.1', port: lb.port, servername: 'localhost', ca: cert, method, path, localAddress: from, agent: false, headers: { host: `localhost:${lb.port}`, ...(data && { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) }), ...headers } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text ? JSON.parse(text) : null }));
    });
    req.on('error', reject);
    req.end(data);
  });
}

async function mint(lb: Balancer): Promise<string> {
  const r = await https(lb, 'POST', '/token', { layoutId: LAYOUT.layoutId }, { 'x-api-key': apiKey });
  expect(r.status).toBe(200);
  return r.body.token as string;
}

interface Wss {
  ws: WebSocket;
  frames: { op: string; [k: string]: unknown }[];
  closed: Promise<number>;
}

/**
 * A live socket through a load balancer, open once its first frame (the page) came. A socket uWS
 * drops with 1006 right after an asynchronous upgrade, before any frame
 * (uNetworking/uWebSockets#1928), is opened again, as every client reconnects: at most twice.
 */
async function openWss(lb: Balancer, token: string): Promise<Wss> {
  for (let attempt = 0; ; attempt++) {
    const ws = new WebSocket(`wss://localhost:${lb.port}/live`, liveProtocols(token), { ca: cert });
    const frames: Wss['frames'] = [];
    ws.on('message', (d: Buffer) => frames.push(JSON.parse(d.toString()) as { op: string }));
    const closed = new Promise<number>((r) => ws.on('close', (code) => r(code)));
    const first = await Promise.race([eventually(() => frames.length > 0).then(() => 'page' as const), closed]);
    if (first === 'page' || attempt === 2 || first !== 1006) return { ws, frames, closed };
  }
}

const metric = async (g: GatewayProcess, series: string) => sample(await scrape(g.opsPort), series) || 0;
const answered = async (g: GatewayProcess, route: string) => {
  const text = await scrape(g.opsPort);
  return [...text.matchAll(new RegExp(`^audience_gateway_http_requests_total\\{route="${route.replace(/[/:]/g, (c) => `\\${c}`)}",status="200"\\} (\\d+)`, 'gm'))].reduce((n, m) => n + Number(m[1]), 0);
};

describe.each(['nginx', 'HAProxy'])('behind %s with TLS', (name) => {
  const lb = () => balancers.find((b) => b.name === name)!;

  it('discovers, mints and acts over https; one participant\'s actions and live socket stay on one gateway, token-less requests spread', async () => {
    const before = await Promise.all(gateways.map((g) => answered(g, '/layout/:layoutId')));
    for (let i = 0; i < 20; i++) expect((await https(lb(), 'GET', `/layout/${LAYOUT.layoutId}`, undefined, { 'x-api-key': apiKey })).status).toBe(200);
    const spread = await Promise.all(gateways.map((g, i) => answered(g, '/layout/:layoutId').then((n) => n - before[i]!)));
    expect(spread.every((n) => n > 0)).toBe(true);
    const token = await mint(lb());
    const accepted = (g: GatewayProcess) => metric(g, 'audience_gateway_actions_total{type="Button",result="accepted"}');
    const was = await Promise.all(gateways.map(accepted));
    for (let i = 0; i < 20; i++) {
      const r = await https(lb(), 'POST', '/action', { layoutId: LAYOUT.layoutId, lid: 1, type: 'Button' }, { authorization: `Bearer ${token}` });
      expect(r.body).toEqual({ success: true });
    }
    const got = (await Promise.all(gateways.map(accepted))).map((n, i) => n - was[i]!);
    expect([...got].sort()).toEqual([0, 20]);
    const socketsOf = () => Promise.all(gateways.map((g) => metric(g, 'audience_gateway_live_sockets')));
    const open = await socketsOf(); // the balancers' idle sockets
    const live = await openWss(lb(), token);
    const sockets = (await socketsOf()).map((n, i) => n - open[i]!);
    expect(sockets).toEqual(got.map((n) => (n === 20 ? 1 : 0)));
    live.ws.close();
    await live.closed;
  });

  it('keeps a participant on its gateway after it renews its token: 20 participants, each acting before and after a renewal, none moves', async () => {
    const accepted = (g: GatewayProcess) => metric(g, 'audience_gateway_actions_total{type="Button",result="accepted"}');
    const where = async (token: string) => {
      const was = await Promise.all(gateways.map(accepted));
      const r = await https(lb(), 'POST', '/action', { layoutId: LAYOUT.layoutId, lid: 1, type: 'Button' }, { authorization: `Bearer ${token}` });
      expect(r.body).toEqual({ success: true });
      return (await Promise.all(gateways.map(accepted))).findIndex((n, i) => n > was[i]!);
    };
    const moved: number[] = [];
    const places = new Set<number>();
    for (let p = 0; p < 20; p++) {
      const token = await mint(lb());
      const before = await where(token);
      const renewed = await https(lb(), 'POST', '/token', { layoutId: LAYOUT.layoutId, renew: token }, { 'x-api-key': apiKey });
      expect(renewed.status).toBe(200);
      const after = await where(renewed.body.token as string);
      places.add(before);
      if (after !== before) moved.push(p);
    }
    expect(moved).toEqual([]);
    expect(places.size).toBe(gateways.length); // the participants spread over the gateways all the same
  });

  it('carries the live channel over wss: page, ack, a page switch, crowd frames, and a revocation closing it', async () => {
    const token = await mint(lb());
    const { ws, frames, closed } = await openWss(lb(), token);
    expect(frames[0]!.op).toBe('page');
    ws.send(JSON.stringify({ op: 'action', ref: 'v1', lid: 4, type: 'Index', value: 1 }));
    await eventually(() => frames.some((f) => f.op === 'ack' && f.ref === 'v1'));
    await eventually(() => frames.some((f) => f.op === 'crowd' && f.lid === 4));
    const admin = createStores(new Redis(redis.get().server.url), prefix);
    try {
      await admin.layouts.activate(LAYOUT.layoutId, 'encore', 'test');
      await eventually(() => frames.some((f) => f.op === 'page' && f.activePageId === 'encore'));
      const sub = (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { sub: string }).sub;
      await admin.layouts.revokeTokens(LAYOUT.layoutId, { sub });
      expect(await closed).toBe(4001);
      await admin.layouts.activate(LAYOUT.layoutId, 'main', 'test');
    } finally {
      admin.redis.disconnect();
    }
  });

  it('keeps an idle socket open past the gateway\'s ping interval; its live-channel timeouts outlive the default idle timeout', { timeout: 40_000 }, async () => {
    const text = readFileSync(lb().file, 'utf8');
    const timeouts = name === 'nginx'
      ? ['proxy_read_timeout', 'proxy_send_timeout'].map((t) => Number(new RegExp(`${t} (\\d+)s;`).exec(text.slice(text.indexOf('location = /live')))?.[1]))
      : [Number(/timeout tunnel (\d+)s/.exec(text)?.[1])];
    for (const t of timeouts) expect(t).toBeGreaterThanOrEqual(2 * 60);
    const idle = idleSockets.get(name)!;
    const { ws, frames, closed } = idle.wss;
    // with nothing sent by the app; a timer may fire a millisecond before Date.now() says it is due
    while (Date.now() - idle.openedAt < IDLE_MS) await new Promise((r) => setTimeout(r, idle.openedAt + IDLE_MS - Date.now() + 1));
    expect(idle.closedWith).toBeNull();
    ws.send(JSON.stringify({ op: 'action', ref: 'late', lid: 1, type: 'Button' }));
    await eventually(() => frames.some((f) => f.ref === 'late'));
    ws.close();
    await closed;
  });

  it('gives the gateways the client\'s address and scheme (TRUST_PROXY), never a forged X-Forwarded-For', async () => {
    const [spent, other, signIn] = lb().from;
    const fail = (from: string, headers: Record<string, string> = {}) => https(lb(), 'POST', '/admin/api/login', { email: `nobody-${Math.random()}@x.example`, password: 'wrong password here' }, { origin: `https://localhost:${lb().port}`, ...headers }, from);
    // three failures from one address spend its budget (ADMIN_LOGIN_MAX_PER_ADDRESS=3)...
    for (let i = 0; i < 3; i++) expect((await fail(spent)).status).toBe(401);
    expect((await fail(spent)).status).toBe(429);
    // ...not another's, even when it claims to be the first
    expect((await fail(other, { 'x-forwarded-for': spent })).status).toBe(401);
    // and a sign-in over https gets a Secure cookie
    const ok = await https(lb(), 'POST', '/admin/api/login', { email: 'lb@team.example', password: 'stage-door-1234' }, { origin: `https://localhost:${lb().port}` }, signIn);
    expect(ok.status).toBe(200);
    expect(String(ok.headers['set-cookie'])).toMatch(/ac_session=[^;]+;.*Secure/);
  });
});
