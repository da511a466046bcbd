// TLS to Redis for every process, against Debian's redis-server with a tls-port and certificates
// made here with openssl: a CA, the server's certificate (for 127.0.0.1 and redis.test), a client
// certificate, and another CA that signed nothing of this server's. The gateway, audiencectl and
// the bridge carry an action to a display over TLS; a server that asks for client certificates
// gets them; a wrong CA, a missing file or TLS files beside a plain URL are refused, naming them.
import { execFile, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startRedisServer, type RedisServer } from '../../dev/redis-server.js';
import { ACTION_FIELD, encodeActionEntry } from '../../schemas/action-entry.js';
import { actionStreamKey } from '../../schemas/redis-keys.js';
import { configFile, runBridge, spawnBridge, stopProcess } from '../helpers/bridge.js';
import { audiencectl, audiencectlJson } from '../helpers/cli.js';
import { GATEWAY_BIN, spawnGateway } from '../helpers/gateway-process.js';
import { DEMO_LAYOUT, eventually, postAction, postJson, testKekFile } from '../helpers/gateway.js';
import { UdpSink } from '../helpers/udp-sink.js';

const dir = mkdtempSync(join(tmpdir(), 'ac-tls-'));
const f = (name: string) => join(dir, name);
const children: ChildProcess[] = [];
const servers: RedisServer[] = [];
const plains: Redis[] = [];
let sink: UdpSink;

function openssl(...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
}

/** A CA, and `name`'s key and certificate signed by it (with the subjectAltNames given). */
function makeCerts(): void {
  for (const ca of ['ca', 'other-ca']) openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', `/CN=${ca}`, '-keyout', `${ca}.key`, '-out', `${ca}.pem`);
  const sign = (name: string, ext: string, ca = 'ca') => {
    openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${name}`, '-keyout', `${name}.key`, '-out', `${name}.csr`);
    writeFileSync(f(`${name}.ext`), ext);
    openssl('x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.pem`, '-CAkey', `${ca}.key`, '-CAcreateserial', '-days', '2', '-extfile', `${name}.ext`, '-out', `${name}.pem`);
  };
  sign('server', 'subjectAltName=IP:127.0.0.1,DNS:redis.test\nextendedKeyUsage=serverAuth\n');
  sign('client', 'extendedKeyUsage=clientAuth\n');
  sign('stranger', 'extendedKeyUsage=clientAuth\n', 'other-ca'); // a client certificate the server's CA did not sign
}

/** A redis-server with a plain port (the test's own reads) and a TLS port (the processes under test). */
async function tlsRedis(authClients: boolean): Promise<{ server: RedisServer; tlsPort: number; plain: Redis }> {
  const tlsPort = await freePort();
  const server = await startRedisServer({
    dir: mkdtempSync(join(dir, 'redis-')),
    appendOnly: false,
    extraArgs: ['--tls-port', String(tlsPort), '--tls-cert-file', f('server.pem'), '--tls-key-file', f('server.key'), '--tls-ca-cert-file', f('ca.pem'), '--tls-auth-clients', authClients ? 'yes' : 'no'],
  });
  servers.push(server);
  const plain = new Redis(server.url);
  plains.push(plain);
  return { server, tlsPort, plain };
}

/** The gateway process with `env`: `--check-config`, or a start that is expected to fail (killed after 10 s). */
function gateway(env: Record<string, string>, ...args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [GATEWAY_BIN, ...args], { env: { PATH: process.env.PATH ?? '', SIGNING_KEK_FILE: testKekFile(), PORT: '0', OPS_PORT: '0', ...env }, timeout: 10_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
    );
  });
}
const gatewayCheck = (env: Record<string, string>) => gateway(env, '--check-config');
const gatewayStart = (env: Record<string, string>) => gateway(env);

/**
 * A TCP proxy to `port` that resets the client's link (RST) once the server has closed its side and
 * its last bytes are passed on: what a client sees when the server hangs up with the client's
 * request unread. After a TLS 1.3 handshake, the client's socket then fails twice: the server's
 * alert, then ECONNRESET.
 */
async function resettingProxy(port: number): Promise<{ port: number; server: Server }> {
  const server = createServer((client) => {
    const upstream = createConnection({ host: '127.0.0.1', port });
    client.on('data', (d) => upstream.write(d)).on('error', () => upstream.destroy());
    upstream.on('data', (d) => client.write(d)).on('error', () => undefined);
    upstream.on('close', () => client.write('', () => setTimeout(() => client.resetAndDestroy(), 50)));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as { port: number }).port, server };
}

const entry = (value: string) => encodeActionEntry({ v: 1, id: `tls-${value}-${Math.random()}`, layoutId: 'show', lid: 5, address: '/005', type: 'String', value, ts: Date.now() });

beforeAll(async () => {
  makeCerts();
  sink = new UdpSink();
  await sink.start();
});
afterAll(async () => {
  for (const c of children) await stopProcess(c, 'SIGKILL');
  for (const p of plains) p.disconnect();
  for (const s of servers) await s.stop();
  await sink.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('TLS to Redis', () => {
  it('carries an action from POST /action to a display over TLS: audiencectl, the gateway and the bridge on rediss:// with REDIS_TLS_CA_FILE', async () => {
    const { tlsPort, plain } = await tlsRedis(false);
    const env = { REDIS_URL: `rediss://127.0.0.1:${tlsPort}`, REDIS_PREFIX: 'tls:', REDIS_TLS_CA_FILE: f('ca.pem') };
    const layoutFile = f('layout.json');
    writeFileSync(layoutFile, JSON.stringify(DEMO_LAYOUT));
    const teamId = (await audiencectlJson(env, 'team', 'create', '--name', 'TLS')).teamId as string;
    await audiencectlJson(env, 'layout', 'import', '--team', teamId, layoutFile);
    const apiKey = (await audiencectlJson(env, 'key', 'create', '--team', teamId)).apiKey as string;
    expect(await gatewayCheck(env)).toMatchObject({ code: 0 });
    const gw = await spawnGateway(env);
    children.push(gw.child);
    const file = configFile({ redisUrl: env.REDIS_URL, prefix: 'tls:', bridgeId: 'tls', redisTls: { caFile: f('ca.pem') }, layouts: [{ layoutId: DEMO_LAYOUT.layoutId, targets: [{ host: '127.0.0.1', port: sink.port }] }] });
    expect(await runBridge(['--config', file, '--check-config'])).toMatchObject({ code: 0 });
    const bridge = await spawnBridge(['--config', file]);
    children.push(bridge.child);
    const token = (await postJson(`${gw.url}/token`, { layoutId: DEMO_LAYOUT.layoutId }, { 'x-api-key': apiKey })).body.token as string;
    expect((await postAction({ url: gw.url }, token, { layoutId: DEMO_LAYOUT.layoutId, lid: 5, type: 'String', value: 'over TLS' })).status).toBe(200);
    await eventually(() => sink.messages.some((m) => m.args[0]!.value === 'over TLS'));
    // the connections are TLS ones: Redis counts them on its TLS port only
    const clients = String(await plain.client('LIST'));
    expect(clients).toMatch(/name=audience-bridge:tls/);
    expect(clients).toMatch(/laddr=127\.0\.0\.1:\d+ .*name=audience-bridge:tls/);
    expect([...clients.matchAll(/laddr=127\.0\.0\.1:(\d+) .*name=audience-(?:bridge|gateway)/g)].every((m) => Number(m[1]) === tlsPort)).toBe(true);
    await stopProcess(bridge.child);
    await stopProcess(gw.child);
    plain.disconnect();
  });

  it('presents a client certificate to a Redis that asks for one (tls-auth-clients yes), and says which settings are missing when it has none', async () => {
    const { tlsPort, plain } = await tlsRedis(true);
    const url = `rediss://127.0.0.1:${tlsPort}`;
    const without = { REDIS_URL: url, REDIS_PREFIX: 'mtls:', REDIS_TLS_CA_FILE: f('ca.pem') };
    const withCert = { ...without, REDIS_TLS_CERT_FILE: f('client.pem'), REDIS_TLS_KEY_FILE: f('client.key') };
    const refused = await audiencectl(without, 'team', 'list');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/REDIS_TLS_CERT_FILE/);
    const check = await gatewayCheck(without);
    expect(check.code).toBe(2);
    expect(check.out).toMatch(/client certificate.*REDIS_TLS_CERT_FILE/);
    expect(await gatewayCheck(withCert)).toMatchObject({ code: 0 });
    const stranger = await gatewayCheck({ ...without, REDIS_TLS_CERT_FILE: f('stranger.pem'), REDIS_TLS_KEY_FILE: f('stranger.key') });
    expect([stranger.code, stranger.out]).toEqual([2, expect.stringMatching(/refused the client certificate REDIS_TLS_CERT_FILE=.*stranger\.pem/)]);
    expect((await audiencectl(withCert, 'team', 'list')).code).toBe(0);
    // the bridge with the certificate in its config file delivers
    const file = configFile({ redisUrl: url, prefix: 'mtls:', bridgeId: 'mtls', redisTls: { caFile: f('ca.pem'), certFile: f('client.pem'), keyFile: f('client.key'), servername: 'redis.test' }, layouts: [{ layoutId: 'show', targets: [{ host: '127.0.0.1', port: sink.port }] }] });
    const bridge = await spawnBridge(['--config', file]);
    children.push(bridge.child);
    await plain.xadd(actionStreamKey('mtls:', 'show'), '*', ACTION_FIELD, entry('mutual'));
    await eventually(() => sink.messages.some((m) => m.args[0]!.value === 'mutual'));
    await stopProcess(bridge.child);
    plain.disconnect();
  });

  it('says which settings are missing, without crashing, when the server refuses the missing client certificate and then resets the link (two errors on one socket)', async () => {
    const { tlsPort, plain } = await tlsRedis(true);
    plain.disconnect();
    const proxy = await resettingProxy(tlsPort);
    try {
      const without = { REDIS_URL: `rediss://127.0.0.1:${proxy.port}`, REDIS_PREFIX: 'rst:', REDIS_TLS_CA_FILE: f('ca.pem') };
      const unhandled = /Unhandled 'error' event|ECONNRESET/;
      const cli = await audiencectl(without, 'team', 'list');
      expect([cli.code, cli.stderr]).toEqual([1, expect.stringMatching(/asks for a client certificate.*REDIS_TLS_CERT_FILE/)]);
      expect(cli.stderr).not.toMatch(unhandled);
      const check = await gatewayCheck(without);
      expect([check.code, check.out]).toEqual([2, expect.stringMatching(/client certificate.*REDIS_TLS_CERT_FILE/)]);
      expect(check.out).not.toMatch(unhandled);
      const start = await gatewayStart(without);
      expect([start.code, start.out]).toEqual([1, expect.stringMatching(/client certificate.*REDIS_TLS_CERT_FILE/)]);
      expect(start.out).not.toMatch(unhandled);
      const file = configFile({ redisUrl: without.REDIS_URL, prefix: 'rst:', bridgeId: 'rst', redisTls: { caFile: f('ca.pem') }, layouts: [{ layoutId: 'show', targets: [{ host: '127.0.0.1', port: sink.port }] }] });
      const bridgeStart = await runBridge(['--config', file]);
      expect([bridgeStart.code, bridgeStart.stderr]).toEqual([1, expect.stringMatching(/client certificate.*REDIS_TLS_CERT_FILE/)]);
      expect(bridgeStart.stderr).not.toMatch(unhandled);
    } finally {
      proxy.server.close();
    }
  });

  it('refuses a CA that did not sign the server\'s certificate at start and in --check-config, naming the file; also a missing file, a certificate without its key and TLS files beside a plain URL', async () => {
    const { tlsPort } = await tlsRedis(false);
    const wrong = { REDIS_URL: `rediss://127.0.0.1:${tlsPort}`, REDIS_PREFIX: 'w:', REDIS_TLS_CA_FILE: f('other-ca.pem') };
    const named = new RegExp(`does not verify against REDIS_TLS_CA_FILE=${f('other-ca.pem').replace(/[.]/g, '\\.')}`);
    const check = await gatewayCheck(wrong);
    expect(check.code).toBe(2);
    expect(check.out).toMatch(named);
    const start = await gatewayStart(wrong);
    expect(start.code).toBe(1);
    expect(start.out).toMatch(named);
    const cli = await audiencectl(wrong, 'team', 'list');
    expect(cli.code).not.toBe(0);
    expect(cli.stderr).toMatch(named);
    const file = configFile({ redisUrl: wrong.REDIS_URL, prefix: 'w:', bridgeId: 'wrong', redisTls: { caFile: f('other-ca.pem') }, layouts: [{ layoutId: 'show', targets: [{ host: '127.0.0.1', port: sink.port }] }] });
    const bridgeCheck = await runBridge(['--config', file, '--check-config']);
    expect(bridgeCheck.code).toBe(2);
    expect(bridgeCheck.stderr).toMatch(named);
    const bridgeStart = await runBridge(['--config', file]);
    expect(bridgeStart.code).toBe(1);
    expect(bridgeStart.stderr).toMatch(named);
    // the server's name: the certificate names 127.0.0.1 and redis.test, not another.test
    const misnamed = await gatewayCheck({ ...wrong, REDIS_TLS_CA_FILE: f('ca.pem'), REDIS_TLS_SERVERNAME: 'another.test' });
    expect(misnamed.code).toBe(2);
    expect(misnamed.out).toMatch(/does not name this host.*REDIS_TLS_SERVERNAME/);
    // settings that cannot work, refused before any connection
    const missing = await gatewayCheck({ ...wrong, REDIS_TLS_CA_FILE: f('nowhere.pem') });
    expect([missing.code, missing.out]).toEqual([2, expect.stringMatching(/REDIS_TLS_CA_FILE: cannot read .*nowhere\.pem \(ENOENT\)/)]);
    const halfPair = await gatewayCheck({ ...wrong, REDIS_TLS_CA_FILE: f('ca.pem'), REDIS_TLS_CERT_FILE: f('client.pem') });
    expect([halfPair.code, halfPair.out]).toEqual([2, expect.stringMatching(/REDIS_TLS_KEY_FILE is missing/)]);
    const plainUrl = await gatewayCheck({ ...wrong, REDIS_URL: 'redis://127.0.0.1:6379', REDIS_TLS_CA_FILE: f('ca.pem') });
    expect([plainUrl.code, plainUrl.out]).toEqual([2, expect.stringMatching(/not reached over TLS: use a rediss:\/\/ URL/)]);
    const bridgePlain = await runBridge(['--config', configFile({ redisUrl: 'redis://127.0.0.1:6379', prefix: 'w:', redisTls: { caFile: f('ca.pem') }, layouts: [{ layoutId: 'show', targets: [{ host: '127.0.0.1', port: sink.port }] }] }), '--check-config']);
    expect([bridgePlain.code, bridgePlain.stderr]).toEqual([2, expect.stringMatching(/not reached over TLS/)]);
  });
});
