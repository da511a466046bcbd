// Password and TLS in both modes: a Redis Cluster that requires a password (given in one seed's
// URL, applied to every node), and one Redis server over TLS with a password (rediss://, the CA
// trusted through NODE_EXTRA_CA_CERTS), each used by audiencectl and a gateway process.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../dev/redis-server.js';
import { stopProcess } from '../helpers/bridge.js';
import { audiencectl, audiencectlJson } from '../helpers/cli.js';
import { spawnGateway } from '../helpers/gateway-process.js';
import { DEMO_LAYOUT, eventually, postJson } from '../helpers/gateway.js';
import { useRedisCluster } from '../helpers/redis-cluster.js';

const PASSWORD = 's3cret-Pa55';
const cluster = useRedisCluster({ password: PASSWORD });
const children: ChildProcess[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const c of children) await stopProcess(c, 'SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A team, the demo layout and a key through audiencectl; the key. */
async function seed(env: Record<string, string> & { REDIS_URL: string; REDIS_PREFIX: string }, dir: string): Promise<string> {
  const file = join(dir, 'layout.json');
  writeFileSync(file, JSON.stringify(DEMO_LAYOUT));
  const teamId = (await audiencectlJson(env, 'team', 'create', '--name', 'T')).teamId as string;
  await audiencectlJson(env, 'layout', 'import', '--team', teamId, file);
  return (await audiencectlJson(env, 'key', 'create', '--team', teamId)).apiKey as string;
}

describe('Redis password and TLS', () => {
  it('a cluster with a password: the seed URL’s credentials reach every node; a wrong one is refused clearly', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ac-auth-'));
    dirs.push(dir);
    const [first, ...rest] = cluster.get().seeds.split(',');
    const env = { REDIS_URL: 'redis://127.0.0.1:1', REDIS_PREFIX: 'auth:', REDIS_CLUSTER_NODES: [`redis://:${PASSWORD}@${first}`, ...rest].join(',') };
    const apiKey = await seed(env, dir);
    const gw = await spawnGateway(env);
    children.push(gw.child);
    expect((await postJson(`${gw.url}/token`, { layoutId: 'demo-show' }, { 'x-api-key': apiKey })).status).toBe(200);
    const wrong = await audiencectl({ ...env, REDIS_CLUSTER_NODES: `redis://:wrong@${first}` }, 'team', 'list', '--json');
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toMatch(/WRONGPASS|NOAUTH|invalid username-password/i);
  });

  it('one server over TLS with a password: rediss:// with the CA from NODE_EXTRA_CA_CERTS', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ac-tls-'));
    dirs.push(dir);
    const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
    ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=audience-control test CA');
    ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1');
    writeFileSync(join(dir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1\n');
    ssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '2', '-extfile', 'ext.cnf');
    const port = await freePort();
    const server = spawn('redis-server', ['--port', '0', '--tls-port', String(port), '--bind', '127.0.0.1', '--tls-cert-file', 'server.crt', '--tls-key-file', 'server.key', '--tls-ca-cert-file', 'ca.crt', '--tls-auth-clients', 'no', '--requirepass', PASSWORD, '--save', '', '--appendonly', 'no', '--dir', dir, '--logfile', ''], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
    children.push(server);
    const env = { REDIS_URL: `rediss://:${PASSWORD}@127.0.0.1:${port}`, REDIS_PREFIX: 'tls:', NODE_EXTRA_CA_CERTS: join(dir, 'ca.crt') };
    await eventually(async () => (await audiencectl(env, 'team', 'list', '--json')).code === 0);
    const apiKey = await seed(env, dir);
    const gw = await spawnGateway(env);
    children.push(gw.child);
    expect((await postJson(`${gw.url}/token`, { layoutId: 'demo-show' }, { 'x-api-key': apiKey })).status).toBe(200);
    // without the CA, the server's certificate is refused: TLS is really checked
    const untrusted = await audiencectl({ REDIS_URL: env.REDIS_URL, REDIS_PREFIX: env.REDIS_PREFIX }, 'team', 'list', '--json');
    expect(untrusted.code).not.toBe(0);
  });
});
