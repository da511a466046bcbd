// A gateway process killed (-9) under load never has answered 200 for an action missing from the stream.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../dev/redis-server.js';
import { recordFigure } from '../helpers/figures.js';
import { UNLIMITED_ENV } from '../helpers/gateway-process.js';
import { eventually, mintToken, postAction, testKekFile, useGatewayWithToken } from '../helpers/gateway.js';
import { killAfterEach } from '../helpers/processes.js';
import { useRedis } from '../helpers/redis.js';

const BIN = fileURLToPath(new URL('../../dist/gateway/main.js', import.meta.url));
const redis = useRedis();
const seeded = useGatewayWithToken(() => redis.get().server.url);
const killed = killAfterEach(); // a failed test leaves no gateway behind

describe('gateway crash under load', () => {
  it('every 200 it gave is in the stream', async () => {
    const port = await freePort();
    const child = killed(spawn(process.execPath, [BIN], { env: { PATH: process.env.PATH ?? '', SIGNING_KEK_FILE: testKekFile(), ...UNLIMITED_ENV, REDIS_URL: redis.get().server.url, REDIS_PREFIX: seeded.t.config.redisPrefix, PORT: String(port), OPS_PORT: '0' } }));
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    await eventually(() => out.includes('listening'), 10_000);
    const api = { url: `http://127.0.0.1:${port}` };
    const token = await mintToken(api, seeded.t.layoutId, seeded.t.apiKey);
    const accepted: string[] = [];
    let seq = 0;
    let running = true;
    const client = async () => {
      while (running) {
        const value = `g${seq++}`;
        const r = await postAction(api, token, { layoutId: seeded.t.layoutId, lid: 5, type: 'String', value }).catch(() => null);
        if (r?.status === 200) accepted.push(value);
        if (!r) await new Promise((res) => setTimeout(res, 5)); // the gateway is gone
      }
    };
    const clients = Array.from({ length: 16 }, client);
    await eventually(() => accepted.length > 500, 10_000);
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    await new Promise((r) => setTimeout(r, 200));
    running = false;
    await Promise.all(clients);
    const entries = await redis.get().client.xrange(`${seeded.t.config.redisPrefix}layout:{${seeded.t.layoutId}}:actions`, '-', '+');
    const inStream = new Set(entries.map(([, f]) => (JSON.parse(f[1]!) as { value: string }).value));
    expect(accepted.filter((v) => !inStream.has(v))).toEqual([]);
    recordFigure('gateway_crash_accepted_actions', accepted.length, 'actions', 'all in the stream');
    recordFigure('gateway_crash_unconfirmed_entries', inStream.size - accepted.length, 'entries', 'appended but unanswered when killed');
  });
});
