// deploy/Containerfile, built with podman on a base image made of the machine's own Node
// (deploy/container/local-node-base.sh; no registry is reachable here), then run as a pod: Redis,
// two gateways (read-only root, no capabilities, the image's user), a bridge on its own Redis user,
// and liblo's oscdump as the display. Through the pod's published ports the README's walk-through
// plays: discover, mint, act, the OSC line on the display; the live channel (page, ack, a page
// switch made with audiencectl inside a gateway container); then SIGTERM to a gateway container
// drains its live sockets (1012) and it exits 0 well within the grace period.
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLOSE } from '../../schemas/live-protocol.js';
import { freePort } from '../../dev/redis-server.js';
import { call, eventually, mintToken, postAction } from '../helpers/gateway.js';
import { connectLive, type LiveClient } from '../helpers/live.js';
import { imageOfHostPrograms, podman, run } from '../helpers/podman.js';

const LAYOUT = 'schemas/demo-layout.json';
const LAYOUT_ID = 'demo-show';
const tag = `ac-test-${process.pid}`;
const IMAGE = `localhost/${tag}:latest`;
const BASE = `localhost/${tag}-node-base`;
const PEERS = `localhost/${tag}-peers`;
/** the gateways' settings inside the pod; LIVE_DRAIN_MS short, for the SIGTERM test */
const LIVE_DRAIN_MS = 3000;
/** what podman stop waits before SIGKILL, as terminationGracePeriodSeconds does */
const GRACE_S = 30;
const dir = mkdtempSync(join(tmpdir(), 'ac-container-'));
const ports = { gw1: 0, gw2: 0, ops1: 0, ops2: 0 };
let apiKey = '';

/** podman run in the pod, as the image's user, with a read-only root and no capabilities */
function inPod(name: string, env: Record<string, string>, command: string[], image = IMAGE): string[] {
  return [
    'run', '-d', '--pod', tag, '--name', `${tag}-${name}`,
    '--read-only', '--cap-drop', 'ALL', '--security-opt', 'no-new-privileges',
    ...Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]),
    ...(image === IMAGE ? ['-v', `${dir}/kek:/etc/audience/kek:ro`] : []),
    image, ...command,
  ];
}

const REDIS_URL = 'redis://127.0.0.1:6379';
const KEK_ENV = { SIGNING_KEK_FILE: '/etc/audience/kek/signing-kek' };

async function audiencectl(...args: string[]): Promise<Record<string, string>> {
  const out = await podman(['run', '--rm', '--pod', tag, '--read-only', '--cap-drop', 'ALL', '-e', `REDIS_URL=${REDIS_URL}`, '-e', `SIGNING_KEK_FILE=${KEK_ENV.SIGNING_KEK_FILE}`, '-v', `${dir}/kek:/etc/audience/kek:ro`, '-v', `${process.cwd()}/${LAYOUT}:/layout.json:ro`, IMAGE, 'audiencectl', ...args, '--json']);
  return JSON.parse(out) as Record<string, string>;
}

const logs = (name: string) => podman(['logs', `${tag}-${name}`]);
const api = (n: 1 | 2) => `http://127.0.0.1:${n === 1 ? ports.gw1 : ports.gw2}`;

beforeAll(async () => {
  for (const k of Object.keys(ports) as (keyof typeof ports)[]) ports[k] = await freePort();
  // the key-encryption key as the Deployment mounts it: root's, group 10001 (fsGroup), 0440
  mkdirSync(`${dir}/kek`);
  writeFileSync(`${dir}/kek/signing-kek`, randomBytes(32).toString('hex'));
  chownSync(`${dir}/kek/signing-kek`, 0, 10001);
  chmodSync(`${dir}/kek/signing-kek`, 0o440);
  chmodSync(dir, 0o755);

  // Node 22 LTS as the base (the script's own choice, whatever Node runs this test), the peers from the machine's packages
  await run('bash', ['deploy/container/local-node-base.sh', BASE]);
  await imageOfHostPrograms(PEERS, ['/usr/bin/redis-server', '/usr/bin/redis-cli', '/usr/bin/oscdump']);
  await run('podman', ['build', '--layers=false', '--network', 'host', '--build-arg', `BASE=${BASE}`, '-f', 'deploy/Containerfile', '-t', IMAGE, '.'], {}, 600_000);

  await podman(['pod', 'create', '--name', tag, '-p', `127.0.0.1:${ports.gw1}:8080`, '-p', `127.0.0.1:${ports.gw2}:8081`, '-p', `127.0.0.1:${ports.ops1}:9464`, '-p', `127.0.0.1:${ports.ops2}:9465`]);
  await podman(inPod('redis', {}, ['redis-server', '--port', '6379', '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], PEERS));
  await podman(inPod('osc', {}, ['oscdump', '-L', '9000'], PEERS));
  await eventually(async () => (await podman(['exec', `${tag}-redis`, 'redis-cli', 'ping']).catch(() => '')).trim() === 'PONG', 10_000);

  const team = await audiencectl('team', 'create', '--name', 'Container show');
  await audiencectl('layout', 'import', '/layout.json', '--team', team.teamId!);
  apiKey = (await audiencectl('key', 'create', '--team', team.teamId!, '--name', 'backend')).apiKey!;
  const bridgeUrl = (await audiencectl('bridge', 'grant', '--bridge-id', 'venue', '--layout', LAYOUT_ID)).redisUrl!;

  const gateway = { REDIS_URL, ...KEK_ENV, LIVE_DRAIN_MS: String(LIVE_DRAIN_MS) };
  await podman(inPod('gw1', { ...gateway, PORT: '8080', OPS_PORT: '9464' }, []));
  await podman(inPod('gw2', { ...gateway, PORT: '8081', OPS_PORT: '9465' }, []));
  await podman(inPod('bridge', { REDIS_URL: bridgeUrl }, ['audience-bridge', '--bridge-id', 'venue', '--layout', LAYOUT_ID, '--target', '127.0.0.1:9000', '--ops-port', '9466']));
  for (const ops of [ports.ops1, ports.ops2]) {
    await eventually(async () => (await fetch(`http://127.0.0.1:${ops}/readyz`).catch(() => null))?.status === 200, 20_000);
  }
}, 900_000);

afterAll(async () => {
  const failed = await podman(['ps', '-a', '--filter', `pod=${tag}`, '--format', '{{.Names}}']).catch(() => '');
  for (const name of failed.split('\n').filter(Boolean)) {
    const out = await podman(['logs', '--tail', '20', name]).catch(() => '');
    if (out) console.log(`--- ${name} (last lines)\n${out}`);
  }
  await podman(['pod', 'rm', '-f', '-t', '0', tag]).catch(() => undefined);
  await podman(['rmi', '-f', IMAGE, BASE, PEERS]).catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
}, 120_000);

describe('the container image', () => {
  it('is built on a base pinned by digest: a registry image named by its tag alone is refused before anything is installed', async () => {
    const tagged = `docker.io/library/${tag}-tagged:22`;
    await podman(['tag', BASE, tagged]);
    try {
      const refused = await run('podman', ['build', '--layers=false', '--pull=never', '--build-arg', `BASE=${tagged}`, '-f', 'deploy/Containerfile', '-t', `${IMAGE}-tagged`, '.'], {}, 120_000).then(() => 'built', (e: Error) => e.message);
      expect(refused).toContain(`BASE=${tagged} is a tag: pin the base image by digest`);
    } finally {
      await podman(['rmi', '-f', tagged, `${IMAGE}-tagged`]).catch(() => undefined);
    }
  });

  it('runs on Node 22 LTS, whatever Node the machine that built it runs: audience-gateway --version says so', async () => {
    const version = (await podman(['run', '--rm', '--read-only', '--cap-drop', 'ALL', IMAGE, 'audience-gateway', '--version'])).trim();
    expect(version).toMatch(/^audience-gateway \d+\.\d+\.\d+ \(Node v22\.\d+\.\d+\)$/);
  });

  it('runs audience-gateway by default as uid 10001; has audiencectl and audience-bridge; carries no npm, compiler, development dependency or other platform\'s binary', async () => {
    const [config] = JSON.parse(await podman(['image', 'inspect', IMAGE])) as { Config: { Cmd: string[]; User: string } }[];
    expect(config!.Config.Cmd).toEqual(['audience-gateway']);
    expect(config!.Config.User).toBe('10001:10001');
    const look = `const fs = require('fs'), path = require('path');
      const bin = path.dirname(process.execPath);
      console.log(JSON.stringify({
        uid: process.getuid(),
        abi: process.versions.modules,
        npm: ['npm', 'npx', 'corepack', 'yarn'].filter((n) => fs.existsSync(path.join(bin, n))),
        globalModules: fs.existsSync(path.resolve(bin, '../lib/node_modules')),
        dev: ['typescript', 'vitest', 'eslint', '@types', 'playwright-core', 'autocannon'].filter((m) => fs.existsSync('/app/node_modules/' + m)),
        uws: fs.readdirSync('/app/node_modules/uWebSockets.js').filter((f) => f.endsWith('.node')),
        maps: fs.readdirSync('/app/dist', { recursive: true }).filter((f) => String(f).endsWith('.map')).length,
        sources: fs.readdirSync('/app/dist', { recursive: true }).filter((f) => String(f).endsWith('.ts')).length,
        commands: fs.readdirSync('/app/bin').sort(),
      }));`;
    const inside = JSON.parse(await podman(['run', '--rm', '--read-only', IMAGE, 'node', '-e', look])) as Record<string, unknown>;
    // the uWebSockets.js binary of the image's own Node (22: ABI 127), not of the Node that built it
    expect(inside).toEqual({
      uid: 10001, abi: '127', npm: [], globalModules: false, dev: [], maps: 0, sources: 0,
      uws: ['uws_linux_x64_127.node'],
      commands: ['audience-bridge', 'audience-gateway', 'audience-loadtest', 'audience-osc-monitor', 'audiencectl'],
    });
    for (const command of ['audiencectl', 'audience-bridge']) {
      expect(await podman(['run', '--rm', '--read-only', IMAGE, command, '--help'])).toMatch(/^Usage: /);
    }
  });

  it('plays the walk-through through the pod: discover, mint, act on either gateway, and the display prints the OSC', async () => {
    const discovered = await call(`${api(1)}/layout/${LAYOUT_ID}`, { headers: { 'x-api-key': apiKey } });
    expect(discovered.status).toBe(200);
    expect((discovered.body as { controls: { lid: number }[] }).controls.map((c) => c.lid)).toContain(2);
    const token = await mintToken({ url: api(1) }, LAYOUT_ID, apiKey);
    expect((await postAction({ url: api(1) }, token, { layoutId: LAYOUT_ID, lid: 2, type: 'Slider', value: 0.75 })).body).toEqual({ success: true });
    expect((await postAction({ url: api(2) }, token, { layoutId: LAYOUT_ID, lid: 6, type: 'XYPad', value: [0.2, 0.9] })).body).toEqual({ success: true });
    await eventually(async () => {
      const printed = await logs('osc');
      return /\/002 f 0\.75/.test(printed) && /\/006 ff 0\.2\d* 0\.9/.test(printed);
    }, 10_000);
  });

  it('serves the live channel through the pod: page, ack, and a page switch made with audiencectl in a gateway container', async () => {
    const live = await connectLive(api(2), await mintToken({ url: api(1) }, LAYOUT_ID, apiKey));
    expect(await live.next('page')).toMatchObject({ layoutId: LAYOUT_ID, activePageId: 'main' });
    const at = live.frames.length;
    live.send({ op: 'action', ref: 'c1', lid: 2, type: 'Slider', value: 0.25 });
    expect(await live.next('ack', at)).toMatchObject({ ref: 'c1' });
    await eventually(async () => /\/002 f 0\.25/.test(await logs('osc')), 10_000);
    const before = live.frames.length;
    await podman(['exec', `${tag}-gw1`, 'audiencectl', 'layout', 'activate', LAYOUT_ID, 'encore']);
    expect((await live.next('page', before, 5000)).activePageId).toBe('encore');
    await podman(['exec', `${tag}-gw1`, 'audiencectl', 'layout', 'activate', LAYOUT_ID, 'main']);
    live.ws.close();
  });

  it('SIGTERM to a gateway container drains its live sockets (1012) and it exits 0 within the grace period; the other gateway keeps serving', async () => {
    const token = () => mintToken({ url: api(1) }, LAYOUT_ID, apiKey);
    const sockets: LiveClient[] = [];
    for (let i = 0; i < 20; i++) sockets.push(await connectLive(api(2), await token()));
    const started = Date.now();
    const stopping = podman(['stop', '-t', String(GRACE_S), `${tag}-gw2`], (GRACE_S + 30) * 1000);
    const closes = await Promise.all(sockets.map((s) => s.closed));
    await stopping;
    const took = Date.now() - started;
    const [state] = JSON.parse(await podman(['inspect', `${tag}-gw2`])) as { State: { ExitCode: number; OOMKilled: boolean } }[];
    console.log(`figure: container_drain_ms = ${took} (20 sockets, LIVE_DRAIN_MS=${LIVE_DRAIN_MS}, grace ${GRACE_S} s)`);
    expect(closes.map((c) => c.code)).toEqual(sockets.map(() => CLOSE.serviceRestart));
    expect(state!.State.ExitCode).toBe(0);
    expect(took).toBeLessThan(GRACE_S * 1000);
    // gateway 1 still discovers, mints and takes actions
    expect((await postAction({ url: api(1) }, await token(), { layoutId: LAYOUT_ID, lid: 2, type: 'Slider', value: 0.5 })).body).toEqual({ success: true });
  }, 120_000);
});
