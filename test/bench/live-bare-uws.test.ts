// bench -- live judges the live channel against bare uWebSockets.js doing the least the same job
// takes (bench/live-bare-uws.ts). The floor must do that job: ack each frame with its own ref, and
// send the crowd's newest value once per 4 Hz tick, never every value told to it since the last
// (a floor that replays what it missed batches stale frames into one write and flatters itself).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { liveSubprotocols } from '../../schemas/live-protocol.js';
import { killAfterEach } from '../helpers/processes.js';
import { useRedis } from '../helpers/redis.js';

const FLOOR = fileURLToPath(new URL('../../dist/bench/live-bare-uws.js', import.meta.url));
const tracked = killAfterEach();
const redis = useRedis();

/** The floor started with `env`: its process and port, once it listens. */
async function floor(env: Record<string, string> = {}) {
  const child = tracked(spawn(process.execPath, [FLOOR, '0', '{"op":"page","activePageId":"main"}'], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'inherit'] }));
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the floor exited with ${code} before it listened`)));
  });
  return { child, port: Number(/listening (\d+)/.exec(line)![1]) };
}

/** A socket on the floor at `port` and the acks it reads; rejects when the floor is gone. */
async function socketOn(port: number) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/live`, liveSubprotocols('any'));
  const acks: string[] = [];
  ws.on('message', (d: Buffer) => void (d.toString().startsWith('{"op":"ack"') && acks.push(d.toString())));
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  return { ws, acks };
}

const residentKb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);

describe('the bare uWS floor of bench -- live', () => {
  it('acks every frame with its ref, and sends the newest crowd value once per tick', async () => {
    const { child, port } = await floor();
    const frames: string[] = [];
    const ws = new WebSocket(`ws://127.0.0.1:${port}/live`, liveSubprotocols('any'));
    ws.on('message', (d: Buffer) => frames.push(d.toString()));
    await new Promise((r) => ws.once('open', r));
    for (const ref of ['a1', 'b2', 'c3']) ws.send(JSON.stringify({ op: 'action', ref, lid: 1, type: 'Button' }));
    // 40 values told within one tick's time: at most two ticks can fall inside, so at most two go out, the last one among them
    for (let v = 0; v < 40; v++) child.stdin.write(`crowd {"op":"crowd","lid":2,"value":${v}}\n`);
    await new Promise((r) => setTimeout(r, 700));
    ws.close();
    expect(frames.filter((f) => f.startsWith('{"op":"ack"'))).toEqual(['{"op":"ack","ref":"a1"}', '{"op":"ack","ref":"b2"}', '{"op":"ack","ref":"c3"}']);
    const crowd = frames.filter((f) => f.startsWith('{"op":"crowd"'));
    expect(crowd.length).toBeGreaterThanOrEqual(1);
    expect(crowd.length).toBeLessThanOrEqual(2);
    expect(crowd.at(-1)).toBe('{"op":"crowd","lid":2,"value":39}');
  });

  // bench:lab -- live-perf --bare-loads-gateway: the same floor in a process that holds the gateway's code
  it("with the gateway's modules loaded, holds them and still acks every frame", async () => {
    const plain = await floor();
    const loaded = await floor({ BARE_LOADS_GATEWAY: '1' });
    // the gateway's module graph (the validators' generated code, ioredis, jose, uWS's app, ...) is over 10 MB
    expect(residentKb(loaded.child.pid!) - residentKb(plain.child.pid!)).toBeGreaterThan(10_000);
    const ws = new WebSocket(`ws://127.0.0.1:${loaded.port}/live`, liveSubprotocols('any'));
    const acks: string[] = [];
    ws.on('message', (d: Buffer) => void (d.toString().startsWith('{"op":"ack"') && acks.push(d.toString())));
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify({ op: 'action', ref: 'x9', lid: 1, type: 'Button' }));
    await expect.poll(() => acks, { timeout: 10_000 }).toEqual(['{"op":"ack","ref":"x9"}']);
    ws.close();
  });

  // the storing floor: the same ack, sent only once the frame is in a Redis stream
  it('with BARE_STORE_URL, acks a frame only once its text is in the stream', async () => {
    const { client, server } = redis.get();
    const key = `bare-store-${Date.now()}`;
    const { port } = await floor({ BARE_STORE_URL: server.url, BARE_STORE_KEY: key });
    const { ws, acks } = await socketOn(port);
    await client.call('CLIENT', 'PAUSE', '60000', 'WRITE'); // the floor's call waits, and so must its acks
    try {
      const sent = ['a1', 'b2', 'c3'].map((ref) => JSON.stringify({ op: 'action', ref, lid: 2, type: 'Slider', value: 0.5 }));
      for (const text of sent) ws.send(text);
      await new Promise((r) => setTimeout(r, 500));
      expect(acks).toEqual([]);
      await client.call('CLIENT', 'UNPAUSE');
      await expect.poll(() => acks, { timeout: 10_000 }).toEqual(['{"op":"ack","ref":"a1"}', '{"op":"ack","ref":"b2"}', '{"op":"ack","ref":"c3"}']);
      const stored = await client.xrange(key, '-', '+');
      expect(stored.map(([, fields]) => fields[1])).toEqual(sent);
    } finally {
      await client.call('CLIENT', 'UNPAUSE');
      ws.close();
    }
  });

  it('with BARE_STORE_URL, a socket that closes while its frames wait for Redis leaves the floor serving', async () => {
    const { client, server } = redis.get();
    const key = `bare-store-${Date.now()}`;
    const { child, port } = await floor({ BARE_STORE_URL: server.url, BARE_STORE_KEY: key });
    const leaving = await socketOn(port);
    await client.call('CLIENT', 'PAUSE', '60000', 'WRITE');
    try {
      leaving.ws.send(JSON.stringify({ op: 'action', ref: 'gone', lid: 1, type: 'Button' }));
      await new Promise((r) => setTimeout(r, 300));
      leaving.ws.terminate();
      await new Promise((r) => setTimeout(r, 300));
    } finally {
      await client.call('CLIENT', 'UNPAUSE');
    }
    const staying = await socketOn(port);
    staying.ws.send(JSON.stringify({ op: 'action', ref: 'here', lid: 1, type: 'Button' }));
    await expect.poll(() => staying.acks, { timeout: 10_000 }).toEqual(['{"op":"ack","ref":"here"}']);
    expect(child.exitCode).toBe(null);
    expect(await client.xlen(key)).toBe(2);
    staying.ws.close();
  });
});
