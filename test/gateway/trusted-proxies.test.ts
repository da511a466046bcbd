// X-Forwarded-For and X-Forwarded-Proto are believed only from the load balancer: TRUST_PROXY names
// its addresses or networks, and a peer outside them that sends the headers is taken at its own
// address, scheme http. Without it, any client (any pod, behind a NetworkPolicy that lets pods reach
// the gateway) could spend another address's budget or escape its own with a forged header. A real
// gateway process; requests leave from loopback addresses of the test's choosing.
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientAddress, TrustedProxies } from '../../gateway/http/client-address.js';
import { createStores } from '../../gateway/store/stores.js';
import { DEMO_LAYOUT } from '../helpers/gateway.js';
import { seedLayout, spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';
import { gatewayChild } from '../helpers/gateway-process.js';

const redis = useRedis();
const BALANCER = '127.0.0.2';
let gateway: GatewayProcess;

beforeAll(async () => {
  const prefix = randomPrefix();
  const seeded = await seedLayout(redis.get().server.url, prefix, DEMO_LAYOUT);
  const stores = createStores(seeded.admin, prefix);
  const team = (await stores.layouts.get(DEMO_LAYOUT.layoutId))!.teamId;
  await stores.admins.create(team, 'proxy@team.example', 'stage-door-1234');
  seeded.admin.disconnect();
  // the balancer's one address, and a network of which it is not part
  gateway = await spawnGateway({ REDIS_URL: redis.get().server.url, REDIS_PREFIX: prefix, TRUST_PROXY: `${BALANCER}, 10.99.0.0/16`, ADMIN_LOGIN_MAX_PER_ADDRESS: '3' });
}, 60_000);
afterAll(() => gateway?.child.kill('SIGKILL'));

/** POST /admin/api/login from `from`, with extra headers: the status and the Set-Cookie header. */
function login(from: string, headers: Record<string, string>, password = 'wrong password here', email = `nobody-${Math.random()}@x.example`): Promise<{ status: number; cookie: string }> {
  const body = JSON.stringify({ email, password });
  return new Promise((resolve, reject) => {
    const r = request({ host: '127.0.0.1', port: gateway.port, localAddress: from, method: 'POST', path: '/admin/api/login', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), origin: `http://127.0.0.1:${gateway.port}`, ...headers } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, cookie: String(res.headers['set-cookie'] ?? '') }));
    });
    r.on('error', reject);
    r.end(body);
  });
}

describe('TRUST_PROXY names the load balancer', () => {
  it('a peer outside it is taken at its own address, whatever X-Forwarded-For it forges', async () => {
    const forger = '127.0.0.3';
    const victim = '198.51.100.7';
    for (let i = 0; i < 3; i++) expect((await login(forger, { 'x-forwarded-for': victim })).status).toBe(401);
    // its own budget is spent, and another forged address does not escape it
    expect((await login(forger, { 'x-forwarded-for': '198.51.100.77' })).status).toBe(429);
    // nor did it spend the address it claimed: that client, through the balancer, still has its budget
    expect((await login(BALANCER, { 'x-forwarded-for': victim })).status).toBe(401);
  });

  it("the balancer's X-Forwarded-For gives each client its own budget, the hop it wrote", async () => {
    const client = '203.0.113.9';
    for (let i = 0; i < 3; i++) expect((await login(BALANCER, { 'x-forwarded-for': `10.0.0.1, ${client}` })).status).toBe(401);
    expect((await login(BALANCER, { 'x-forwarded-for': client })).status).toBe(429);
    expect((await login(BALANCER, { 'x-forwarded-for': '203.0.113.10' })).status).toBe(401);
  });

  it('X-Forwarded-Proto https makes a Secure cookie from the balancer only', async () => {
    const good = { 'x-forwarded-proto': 'https', origin: `https://127.0.0.1:${gateway.port}` };
    const viaBalancer = await login(BALANCER, { ...good, 'x-forwarded-for': '203.0.113.20' }, 'stage-door-1234', 'proxy@team.example');
    expect(viaBalancer.status).toBe(200);
    expect(viaBalancer.cookie).toMatch(/ac_session=[^;]+;.*Secure/);
    // a forger's https claim is not believed: its https Origin is not this http site's own
    expect((await login('127.0.0.4', good, 'stage-door-1234', 'proxy@team.example')).status).toBe(403);
    const plain = await login('127.0.0.4', { origin: `http://127.0.0.1:${gateway.port}` }, 'stage-door-1234', 'proxy@team.example');
    expect(plain.status).toBe(200);
    expect(plain.cookie).not.toMatch(/Secure/);
  });

  it('refuses at start what is not an address or a network, and true (which trusted every peer), naming TRUST_PROXY', async () => {
    for (const value of ['true', 'balancer.example', '10.0.0.0/33', '127.0.0.1,']) {
      const child = gatewayChild({ REDIS_URL: redis.get().server.url, TRUST_PROXY: value }, 0);
      let out = '';
      child.stdout?.on('data', (d) => (out += d));
      child.stderr?.on('data', (d) => (out += d));
      const code = await new Promise<number | null>((r) => child.once('exit', r));
      expect(code, `TRUST_PROXY=${value}: ${out}`).not.toBe(0);
      expect(out).toMatch(/TRUST_PROXY/);
    }
  });
});

describe('clientAddress', () => {
  const trusted = TrustedProxies.parse('10.0.0.5, 10.1.0.0/16, fd00::/8');
  it('believes the last X-Forwarded-For hop from a trusted peer only (IPv4, IPv4-mapped IPv6, IPv6)', () => {
    expect(clientAddress('10.0.0.5', '1.2.3.4, 5.6.7.8', trusted)).toBe('5.6.7.8');
    expect(clientAddress('::ffff:10.1.2.3', '5.6.7.8', trusted)).toBe('5.6.7.8');
    expect(clientAddress('fd00::1', '5.6.7.8', trusted)).toBe('5.6.7.8');
    expect(clientAddress('10.0.0.6', '5.6.7.8', trusted)).toBe('10.0.0.6');
    expect(clientAddress('10.0.0.5', '', trusted)).toBe('10.0.0.5');
    expect(clientAddress('10.0.0.5', '5.6.7.8', TrustedProxies.parse(''))).toBe('10.0.0.5');
    expect(clientAddress('10.0.0.5', '5.6.7.8', TrustedProxies.parse('false'))).toBe('10.0.0.5');
  });
});
