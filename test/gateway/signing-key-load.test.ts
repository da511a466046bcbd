// A gateway's read of the signing keys is one snapshot: the current kid it reads is always among
// the keys it reads, even when another gateway makes or rotates the current key between its
// commands. A gateway that held a current kid without its secret answered 401 token_invalid to a
// token minted on another gateway with that key.
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisKeys } from '../../gateway/store/keys.js';
import { loadKek } from '../../gateway/store/signing-kek.js';
import { SigningKeyStore } from '../../gateway/store/signing-keys.js';
import { eventually, testKekFile } from '../helpers/gateway.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';

const redis = useRedis();

/**
 * A TCP proxy in front of Redis that can stop passing the client's bytes after a given count, as a
 * slow link delivers a client's second command well after its first: the test acts in between.
 */
class GateProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private budget = Infinity;
  private readonly waiting: Buffer[] = [];
  private upstream: Socket | undefined;
  port = 0;

  constructor(private readonly targetPort: number) {}

  async start(): Promise<void> {
    this.server = createServer((client) => {
      const upstream = createConnection({ host: '127.0.0.1', port: this.targetPort });
      this.upstream = upstream;
      this.sockets.add(client).add(upstream);
      client.on('data', (d: Buffer) => {
        this.waiting.push(d);
        this.flush();
      });
      upstream.on('data', (d: Buffer) => client.write(d));
      for (const s of [client, upstream]) s.on('error', () => {}).on('close', () => (client.destroy(), upstream.destroy()));
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as { port: number }).port;
  }

  /** Passes `bytes` more of the client's bytes, then holds the rest. */
  passOnly(bytes: number): void {
    this.budget = bytes;
  }

  /** Passes everything, the held bytes first. */
  open(): void {
    this.budget = Infinity;
    this.flush();
  }

  get held(): number {
    return this.waiting.reduce((n, b) => n + b.length, 0);
  }

  private flush(): void {
    while (this.waiting.length > 0 && this.budget > 0 && this.upstream) {
      const chunk = this.waiting.shift()!;
      const n = Math.min(chunk.length, this.budget);
      this.upstream.write(chunk.subarray(0, n));
      if (n < chunk.length) this.waiting.unshift(chunk.subarray(n));
      this.budget -= n;
    }
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((r) => this.server?.close(r));
  }
}

const proxies: GateProxy[] = [];
const clients: Redis[] = [];
afterAll(async () => {
  for (const c of clients) c.disconnect();
  await Promise.all(proxies.map((p) => p.stop()));
});

/** RESP as a client writes a command. */
const resp = (...args: string[]) => `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;

describe('the signing keys a gateway loads', () => {
  it('hold the current kid they name, when a rotation lands between the reader’s commands', async () => {
    const keys = new RedisKeys(randomPrefix());
    const kek = loadKek(testKekFile());
    const writer = new SigningKeyStore(redis.get().client, keys, kek);
    await writer.ensureCurrent();

    const proxy = new GateProxy(redis.get().server.port);
    proxies.push(proxy);
    await proxy.start();
    const slow = new Redis({ host: '127.0.0.1', port: proxy.port, enableReadyCheck: false, maxRetriesPerRequest: 1 });
    clients.push(slow);
    slow.on('error', () => {});
    const id = String(await slow.client('ID'));
    const reader = new SigningKeyStore(slow, keys, kek);

    // The reader's first command reaches Redis; the rest of its bytes wait in the proxy.
    proxy.passOnly(resp('HGETALL', keys.signingKeys()).length);
    const loading = reader.load();
    await eventually(async () => {
      const line = String(await redis.get().client.client('LIST', 'ID', id));
      return proxy.held > 0 && /\bcmd=(hgetall|multi)\b/.test(line);
    });
    const rotated = await writer.rotate();
    proxy.open();

    const loaded = await loading;
    expect(loaded.keys.map((k) => k.kid)).toContain(loaded.current);
    expect(loaded.current).toBe(rotated.kid);
  });
});
