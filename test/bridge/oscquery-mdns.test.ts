// The OSCQuery server advertised over mDNS (_oscjson._tcp), seen by an mDNS browser. Multicast
// stays inside a network namespace of the test's own, whose only interface is its loopback (with
// multicast on): a Redis, a bridge with oscQueryHost 0.0.0.0 and the browser all run in it, so no
// packet leaves the host. A bridge on loopback (the default) advertises nothing.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BRIDGE_BIN, configFile, spawnBridge, stopProcess } from '../helpers/bridge.js';

const NS = `ac-mdns-${randomBytes(3).toString('hex')}`;
const REDIS_PORT = 16379;
const inNs = (...cmd: string[]) => ['ip', 'netns', 'exec', NS, ...cmd];
const children: ChildProcess[] = [];

/** What an mDNS browser in the namespace finds of _oscjson._tcp in `ms`: one JSON line per service. */
function browse(ms: number): { name: string; port: number; type: string; protocol: string }[] {
  const script = `
    const { Bonjour } = require(${JSON.stringify(new URL('../../node_modules/bonjour-service/dist/index.js', import.meta.url).pathname)});
    const b = new Bonjour();
    b.find({ type: 'oscjson', protocol: 'tcp' }, (s) => console.log(JSON.stringify({ name: s.name, port: s.port, type: s.type, protocol: s.protocol })));
    setTimeout(() => b.destroy(() => process.exit(0)), ${ms});`;
  const r = spawnSync('ip', ['netns', 'exec', NS, process.execPath, '-e', script], { encoding: 'utf8', timeout: ms + 5000 });
  return r.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { name: string; port: number; type: string; protocol: string });
}

beforeAll(async () => {
  for (const c of [['netns', 'add', NS], ['-n', NS, 'link', 'set', 'lo', 'up'], ['-n', NS, 'link', 'set', 'lo', 'multicast', 'on'], ['-n', NS, 'route', 'add', '224.0.0.0/4', 'dev', 'lo']]) {
    const r = spawnSync('ip', c, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`ip ${c.join(' ')}: ${r.stderr}`);
  }
  const [program, ...args] = inNs('redis-server', '--port', String(REDIS_PORT), '--save', '', '--appendonly', 'no');
  const redis = spawn(program!, args);
  children.push(redis);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('redis-server did not start in the namespace')), 10_000);
    redis.stdout.on('data', (d: Buffer) => {
      if (String(d).includes('Ready to accept connections')) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
}, 30_000);
afterAll(async () => {
  for (const c of children) await stopProcess(c);
  spawnSync('ip', ['netns', 'del', NS]);
});

async function bridgeInNs(bridgeId: string, more: Record<string, unknown>): Promise<ChildProcess> {
  const config = configFile({ redisUrl: `redis://127.0.0.1:${REDIS_PORT}`, prefix: 'mdns:', bridgeId, more, layouts: [{ layoutId: 'mdns-show', targets: [{ host: '127.0.0.1', port: 9 }] }] });
  const { child } = await spawnBridge(['--config', config], {}, 15_000, inNs(process.execPath, BRIDGE_BIN));
  children.push(child);
  return child;
}

describe('OSCQuery over mDNS', () => {
  it('advertises a bridge listening on the network as _oscjson._tcp with its port, and not one on loopback', async () => {
    await bridgeInNs('on-loopback', { oscQueryPort: 47001 });
    await bridgeInNs('on-network', { oscQueryPort: 47002, oscQueryHost: '0.0.0.0' });
    const found = browse(3000);
    expect(found).toContainEqual({ name: 'audience-bridge on-network', port: 47002, type: 'oscjson', protocol: 'tcp' });
    expect(found.filter((s) => s.port === 47001)).toEqual([]);
  }, 40_000);
});
