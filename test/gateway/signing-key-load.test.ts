// A gateway's read of the signing keys is one snapshot: the current kid it reads is always among
// the keys it reads, even when another gateway makes or rotates the current key between its
// commands. A gateway that held a current kid without its secret answered 401 token_invalid to a
// token minted on another gateway with that key.
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisKeys } from '../../gateway/store/keys.js';
import { loadKek } from '../../gateway/store/signing-kek.js';
import { SigningKeyStore } from '../../gateway/store/signing-keys.js';
import { eventually, testKekFile } from '../helpers/gateway.js';
import { randomPrefix, useRedis } from '../helpers/redis.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

const redis = useRedis();

const proxies: TcpProxy[] = [];
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

    const proxy = new TcpProxy(redis.get().server.port);
    proxies.push(proxy);
    await proxy.start();
    const slow = new Redis({ host: '127.0.0.1', port: proxy.port, enableReadyCheck: false, maxRetriesPerRequest: 1 });
    clients.push(slow);
    slow.on('error', () => {});
    const id = String(await slow.client('ID'));
    const reader = new SigningKeyStore(slow, keys, kek);

    // The reader's first command reaches Redis; the rest of its bytes wait in the proxy.
    proxy.holdAfter(resp('HGETALL', keys.signingKeys()).length);
    const loading = reader.load();
    await eventually(async () => {
      const line = String(await redis.get().client.client('LIST', 'ID', id));
      return proxy.holding && /\bcmd=(hgetall|multi)\b/.test(line);
    });
    const rotated = await writer.rotate();
    proxy.release();

    const loaded = await loading;
    expect(loaded.keys.map((k) => k.kid)).toContain(loaded.current);
    expect(loaded.current).toBe(rotated.kid);
  });
});
